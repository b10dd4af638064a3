import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { placeOrder, startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

// Events are applied only when CHAIN_CONFIRMATIONS blocks are indexed on top of theirs, so an event in a
// block that leaves the canonical chain is never applied: Ponder deletes its row first.
let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ CHAIN_CONFIRMATIONS: "2" });
});
after(() => stack?.close());

async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(stack.chain.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await response.json()) as { result: unknown }).result;
}

async function depositRows(escrowOrderId: string): Promise<number> {
  const { rows } = await stack.service.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${stack.indexerSchema}".escrow_event WHERE event_name = 'Deposited' AND order_id = $1`,
    [escrowOrderId],
  );
  return rows[0]!.n;
}

async function status(orderId: string): Promise<string> {
  const { rows } = await stack.service.pool.query<{ status: string }>("SELECT status FROM orders WHERE id = $1", [orderId]);
  return rows[0]!.status;
}

test("an escrow event is held until it has enough confirmations", async () => {
  const order = await placeOrder(stack);
  await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  await waitFor("the indexer to record the deposit", async () => ((await depositRows(order.escrowOrderId)) === 1 ? true : undefined));
  await sleep(1500);
  assert.equal(await status(order.id), "PENDING_DEPOSIT", "one block on top is not enough");
  await rpc("hardhat_mine", ["0x2"]);
  await waitForStatus(stack, order.id, "ACTIVE");
});

test("a deposit in a block that leaves the canonical chain is never applied", async () => {
  const order = await placeOrder(stack);
  const snapshot = await rpc("evm_snapshot");
  await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  await waitFor("the indexer to record the deposit", async () => ((await depositRows(order.escrowOrderId)) === 1 ? true : undefined));

  // Reorganisation: back to before the deposit, then a longer chain without it.
  assert.equal(await rpc("evm_revert", [snapshot]), true);
  await rpc("hardhat_mine", ["0x6"]);
  await waitFor("Ponder to drop the orphaned deposit", async () => ((await depositRows(order.escrowOrderId)) === 0 ? true : undefined));
  await sleep(1500);
  assert.equal(await status(order.id), "PENDING_DEPOSIT");
  const { rows } = await stack.service.pool.query("SELECT event FROM order_timeline WHERE order_id = $1 ORDER BY seq", [order.id]);
  assert.deepEqual(rows, [{ event: "CREATED" }]);

  // The deposit made again on the canonical chain is applied once it is confirmed.
  await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  await rpc("hardhat_mine", ["0x2"]);
  await waitForStatus(stack, order.id, "ACTIVE");
});
