// A sandbox wallet's send whose nonce stays taken (decisions 7 and 15: the chaos run's tenfold base fee left
// a wallet's transaction stuck, and the node refused every new one as an underpriced replacement) answers
// 503 CHAIN_UNAVAILABLE, which a later request can get past, never a 500. So does one whose transaction
// a reorganisation removed while its receipt was awaited (the chaos run's last 500), after the same
// signed bytes were broadcast again without coming back.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { InvalidInputRpcError, RpcRequestError, WaitForTransactionReceiptTimeoutError, keccak256, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { sendFromWallet, waitUntilMined, type SentTransaction } from "../../src/chain/wallet-sends.ts";
import { createEscrowGateway, type EscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { ChainUnavailableError } from "../../src/domain/errors.ts";
import { devAccounts, startLocalChain, type LocalChain } from "../../src/stack/local-node.ts";
import { createTestDatabase } from "../support/database.ts";
import { OFFLINE_CHAIN, testNode, type TestNode } from "../support/trade-stack.ts";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});
after(async () => {
  await pool?.end();
  await database?.drop();
});

const account = privateKeyToAccount(devAccounts[4]!.privateKey as Hex);

/** A node whose pending pool holds a stuck transaction at this wallet's next nonce, whatever is sent. */
function nodeWithStuckNonce(refusal: string): { gateway: EscrowGateway; broadcasts: () => number } {
  let broadcasts = 0;
  const gateway = {
    chain: undefined,
    publicClient: {
      getTransactionCount: async () => 60,
      sendRawTransaction: async () => {
        broadcasts += 1;
        throw new InvalidInputRpcError(new RpcRequestError({ body: {}, url: "http://node", error: { code: -32602, message: refusal } }));
      },
      getTransaction: async () => {
        throw new Error("not found");
      },
    },
    walletClient: () => ({
      prepareTransactionRequest: async (request: Record<string, unknown>) => ({ ...request, type: "eip1559", chainId: 31337, gas: 50_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n }),
      signTransaction: (request: Parameters<typeof account.signTransaction>[0]) => account.signTransaction(request),
    }),
  } as unknown as EscrowGateway;
  return { gateway, broadcasts: () => broadcasts };
}

test("a nonce still taken after five fresh reads answers CHAIN_UNAVAILABLE with Retry-After, not a 500", async () => {
  const node = nodeWithStuckNonce("replacement transaction underpriced: a gasPrice/maxPriorityFeePerGas of at least 1100000000 is necessary to replace the existing transaction with nonce 60");
  const refused = await sendFromWallet({ pool, gateway: node.gateway }, account, { to: devAccounts[5]!.address, data: "0x" }).then(
    () => assert.fail("the send cannot succeed"),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof ChainUnavailableError, `got ${String(refused)}`);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers["Retry-After"], "10");
  assert.match(String((refused as { cause?: unknown }).cause), /replacement transaction underpriced/);
  assert.equal(node.broadcasts(), 5, "five signed attempts, each after a fresh nonce read");
});

test("any other refusal is thrown as the node gave it", async () => {
  const node = nodeWithStuckNonce("insufficient funds for gas * price + value");
  const refused = await sendFromWallet({ pool, gateway: node.gateway }, account, { to: devAccounts[5]!.address, data: "0x" }).then(
    () => assert.fail("the send cannot succeed"),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof InvalidInputRpcError);
  assert.equal(node.broadcasts(), 1);
});

test("a transaction that never comes back after its bytes are sent again answers CHAIN_UNAVAILABLE with Retry-After, not a 500", async () => {
  const raw = await account.signTransaction({ type: "eip1559", chainId: 31337, nonce: 7, to: devAccounts[5]!.address, gas: 21_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n });
  const sent: SentTransaction = { hash: keccak256(raw), raw };
  const broadcasts: Hex[] = [];
  const gateway = {
    publicClient: {
      waitForTransactionReceipt: async ({ hash }: { hash: Hex }) => {
        throw new WaitForTransactionReceiptTimeoutError({ hash });
      },
      sendRawTransaction: async ({ serializedTransaction }: { serializedTransaction: Hex }) => {
        broadcasts.push(serializedTransaction);
        return keccak256(serializedTransaction);
      },
    },
  } as unknown as EscrowGateway;
  const refused = await waitUntilMined(gateway, sent).then(
    () => assert.fail("no receipt ever comes"),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof ChainUnavailableError, `got ${String(refused)}`);
  assert.equal(refused.headers["Retry-After"], "10");
  assert.ok((refused as { cause?: unknown }).cause instanceof WaitForTransactionReceiptTimeoutError);
  assert.deepEqual(broadcasts, [raw, raw], "the same signed bytes between the three waits, nothing newly signed");
});

describe("on the node", { timeout: 180_000 }, () => {
  let chain: LocalChain;
  let node: TestNode;
  let gateway: EscrowGateway;
  before(async () => {
    chain = await startLocalChain({ port: 0 });
    node = testNode(chain.rpcUrl);
    gateway = createEscrowGateway({ ...OFFLINE_CHAIN, rpcUrl: chain.rpcUrl });
  });
  after(() => chain?.stop());

  /** A sandbox send the node takes and then drops from its mempool while the send's receipt is awaited. */
  async function droppedSend(): Promise<{ sent: SentTransaction; mined: Promise<Hex> }> {
    await node.rpc("evm_setAutomine", [false]);
    const sent = await sendFromWallet({ pool, gateway }, account, { to: devAccounts[5]!.address, data: "0x", value: 1n });
    const mined = waitUntilMined(gateway, sent);
    mined.catch(() => undefined); // the test awaits it later: its rejection is not unhandled meanwhile
    // What a reorganisation does to a transaction in a removed block that its node does not put back:
    // the node no longer has it. The wait has started, as a request's would have.
    await sleep(1_000);
    assert.equal(await node.rpc("hardhat_dropTransaction", [sent.hash]), true);
    return { sent, mined };
  }

  test("a send dropped while its receipt is awaited is sent again with the same bytes and mined once", async () => {
    const count = await gateway.publicClient.getTransactionCount({ address: account.address });
    const { sent, mined } = await droppedSend();
    await node.rpc("evm_setIntervalMining", [200]);
    assert.equal(await mined, sent.hash);
    assert.equal((await gateway.publicClient.getTransactionReceipt({ hash: sent.hash })).status, "success");
    assert.equal(await gateway.publicClient.getTransactionCount({ address: account.address }), count + 1, "one transaction, not a second one");
    await node.rpc("evm_setIntervalMining", [0]);
  });

  test("a send whose nonce another of the wallet's transactions took meanwhile is never answered as mined: CHAIN_UNAVAILABLE", async () => {
    const { sent, mined } = await droppedSend();
    const other = await sendFromWallet({ pool, gateway }, account, { to: devAccounts[6]!.address, data: "0x", value: 2n });
    await node.rpc("evm_mine");
    assert.equal((await gateway.publicClient.getTransactionReceipt({ hash: other.hash })).status, "success");
    const refused = await mined.then(
      () => assert.fail("its nonce is another transaction's now"),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof ChainUnavailableError, `got ${String(refused)}`);
    assert.equal(await gateway.publicClient.getTransaction({ hash: sent.hash }).then(() => "on chain", () => "gone"), "gone");
  });
});
