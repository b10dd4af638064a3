// A sandbox wallet's send whose nonce stays taken (decisions 7 and 15: the chaos run's tenfold base fee left
// a wallet's transaction stuck, and the node refused every new one as an underpriced replacement) answers
// 503 CHAIN_UNAVAILABLE, which a later request can get past, never a 500.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { InvalidInputRpcError, RpcRequestError, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { sendFromWallet } from "../../src/chain/wallet-sends.ts";
import type { EscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { ChainUnavailableError } from "../../src/domain/errors.ts";
import { devAccounts } from "../../src/stack/local-node.ts";
import { createTestDatabase } from "../support/database.ts";

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
