// Decisions section 7: the service's transactions are watched until final. One dropped from the mempool
// is sent again (same nonce, same bytes), one stuck below the going fee is replaced with a higher fee up
// to MAX_FEE_PER_GAS_GWEI, one that a reorganisation removed is sent again; each action happens once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseTransaction, toHex, type Hash, type Hex } from "viem";
import { createEscrowGateway, type EscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { createTransactionSender, recordTransactionRequest, type TransactionSender } from "../../src/chain/transaction-sender.ts";
import { createLogger } from "../../src/logger.ts";
import { placeOrder, settleTransaction, startTradeStack, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
let gateway: EscrowGateway;
let sender: TransactionSender;
const active: { id: string; escrowOrderId: Hex }[] = [];

async function rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(stack.chain.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = (await response.json()) as { result?: T; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result as T;
}

/** Runs `work` with blocks mined only by evm_mine, so a sent transaction waits in the mempool. */
async function withoutAutomine<T>(work: () => Promise<T>): Promise<T> {
  await rpc("evm_setAutomine", [false]);
  try {
    return await work();
  } finally {
    await rpc("evm_setAutomine", [true]);
  }
}

const minedCount = () => gateway.publicClient.getTransactionCount({ address: gateway.service.address, blockTag: "latest" });

async function row(id: string) {
  const { rows } = await stack.service.pool.query<{ status: string; nonce: string; tx_hash: Hash; raw_tx: Hex | null; replaced_hashes: Hash[]; error: string | null }>(
    "SELECT status, nonce, tx_hash, raw_tx, replaced_hashes, error FROM chain_transactions WHERE id = $1",
    [id],
  );
  return rows[0]!;
}

/** A cancel of an active order, recorded as an order transition records it (no job: the test drives the sender). */
async function cancelRequest(): Promise<{ id: string; escrowOrderId: Hex }> {
  const order = active.shift()!;
  const id = (await recordTransactionRequest(stack.service.pool, { orderId: order.id, action: "cancel", requestKey: `${order.id}:cancel` }))!;
  return { id, escrowOrderId: order.escrowOrderId };
}


const maxFeeOf = (raw: Hex): bigint => parseTransaction(raw).maxFeePerGas!;

before(async () => {
  stack = await startTradeStack();
  gateway = createEscrowGateway(stack.chainSettings);
  sender = createTransactionSender({ pool: stack.service.pool, gateway, logger: createLogger("silent") });
  for (let i = 0; i < 4; i += 1) {
    const order = await placeOrder(stack, { amountUsdc: 5 });
    const deposit = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    active.push({ id: order.id, escrowOrderId: order.escrowOrderId as Hex });
  }
});
after(async () => {
  await stack?.close();
});

describe("a service transaction watched until final", () => {
  test("dropped from the mempool, it is sent again with the same bytes and mined once", async () => {
    const { id, escrowOrderId } = await cancelRequest();
    const before = await minedCount();
    const sent = await withoutAutomine(async () => {
      assert.equal(await sender.process(id), "SENT");
      const stored = await row(id);
      assert.equal(await rpc("hardhat_dropTransaction", [stored.tx_hash]), true);
      assert.equal(await sender.process(id), "SENT");
      await rpc("evm_mine");
      return stored;
    });
    assert.equal(await settleTransaction(sender, id), "MINED");
    const mined = await row(id);
    assert.equal(mined.tx_hash, sent.tx_hash, "the same bytes");
    assert.equal(await minedCount(), before + 1, "one transaction from the service's key");
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });

  test("stuck under a base fee raised tenfold, it is replaced under its nonce with a higher fee and mined once", async () => {
    const { id, escrowOrderId } = await cancelRequest();
    const before = await minedCount();
    const { sent, replaced } = await withoutAutomine(async () => {
      assert.equal(await sender.process(id), "SENT");
      const stored = await row(id);
      await rpc("hardhat_setNextBlockBaseFeePerGas", [toHex(maxFeeOf(stored.raw_tx!) * 10n)]);
      await rpc("evm_mine");
      assert.equal((await gateway.publicClient.getTransactionReceipt({ hash: stored.tx_hash }).catch(() => undefined)), undefined, "not included under the new base fee");
      assert.equal(await sender.process(id), "SENT");
      const replacement = await row(id);
      await rpc("evm_mine");
      return { sent: stored, replaced: replacement };
    });
    assert.notEqual(replaced.tx_hash, sent.tx_hash);
    assert.equal(replaced.nonce, sent.nonce, "the same nonce");
    assert.deepEqual(replaced.replaced_hashes, [sent.tx_hash]);
    assert.ok(maxFeeOf(replaced.raw_tx!) >= (maxFeeOf(sent.raw_tx!) * 11n) / 10n, "at least 10 % more");
    assert.ok(maxFeeOf(replaced.raw_tx!) > maxFeeOf(sent.raw_tx!) * 10n, "above the raised base fee");
    assert.equal(await settleTransaction(sender, id), "MINED");
    assert.equal((await row(id)).tx_hash, replaced.tx_hash);
    assert.equal(await minedCount(), before + 1, "one transaction from the service's key");
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });

  test("at MAX_FEE_PER_GAS_GWEI it is not replaced above the cap, the stall is reported, and it is mined once the base fee falls", async () => {
    const { id, escrowOrderId } = await cancelRequest();
    const before = await minedCount();
    const lines: string[] = [];
    await withoutAutomine(async () => {
      assert.equal(await sender.process(id), "SENT");
      const stored = await row(id);
      const fee = maxFeeOf(stored.raw_tx!);
      const capped = createTransactionSender({ pool: stack.service.pool, gateway, logger: createLogger("info", { write: (line: string) => void lines.push(line) }), maxFeePerGas: fee });
      const { baseFeePerGas } = await gateway.publicClient.getBlock({ blockTag: "latest" });
      await rpc("hardhat_setNextBlockBaseFeePerGas", [toHex(fee * 10n)]);
      await rpc("evm_mine");
      assert.equal(await capped.process(id), "SENT");
      const stalled = await row(id);
      assert.equal(stalled.tx_hash, stored.tx_hash, "not replaced");
      assert.match(stalled.error ?? "", /MAX_FEE_PER_GAS_GWEI/);
      assert.ok(lines.some((line) => line.includes("stuck at the fee cap")), "reported in the log");
      // The base fee comes back down: the transaction as signed goes in.
      await rpc("hardhat_setNextBlockBaseFeePerGas", [toHex(baseFeePerGas!)]);
      await rpc("evm_mine");
      assert.equal(await capped.process(id), "MINED");
      assert.equal((await row(id)).tx_hash, stored.tx_hash);
    });
    assert.equal(await minedCount(), before + 1);
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });

  test("mined, then removed by a reorganisation before its confirmations, it is sent again and mined once", async () => {
    const { id, escrowOrderId } = await cancelRequest();
    const watcher = createTransactionSender({ pool: stack.service.pool, gateway, logger: createLogger("silent"), confirmations: 2 });
    const before = await minedCount();
    const snapshot = await rpc<string>("evm_snapshot");
    assert.equal(await watcher.process(id), "SENT", "mined, not final");
    const sent = await row(id);
    assert.ok(await gateway.publicClient.getTransactionReceipt({ hash: sent.tx_hash }));
    assert.equal(await rpc("evm_revert", [snapshot]), true);
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Active", "the cancel left the chain");

    assert.equal(await watcher.process(id), "SENT", "sent again");
    await rpc("evm_mine");
    await rpc("evm_mine");
    assert.equal(await watcher.process(id), "MINED");
    assert.equal((await row(id)).tx_hash, sent.tx_hash, "the same bytes");
    assert.equal(await minedCount(), before + 1);
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });
});
