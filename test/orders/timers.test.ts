import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import type { Hex } from "viem";
import type { PoolClient } from "../../src/db/pool.ts";
import { DELIVERY_QUEUE, ORDER_TIMER_QUEUE, timerJobId } from "../../src/jobs/queues.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { applyOrderEvent } from "../../src/orders/store.ts";
import { placeOrder, sentToChain, startTradeStack, waitForSettled, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

// Short windows so the pg-boss timers fire within the test: the listing and lock windows are also in
// the signed terms, so the contract enforces the same deadlines. The listing window leaves the lock test
// time to lock on a loaded machine (deposit, indexer, lock, indexer): chain time follows the wall clock
// (decisions section 1), so these are seconds of real time.
let stack: TradeStack;
// The partner's webhooks go to a receiver that takes them all, so every event has its delivery.
const receiver = http.createServer((request, response) => request.resume().on("end", () => response.end()));
before(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  stack = await startTradeStack({ LISTING_TIMEOUT_SECONDS: "12", LOCK_WINDOW_SECONDS: "4" }, { webhookUrl });
});
after(async () => {
  await stack?.close();
  receiver.closeAllConnections();
  receiver.close();
});

const sandbox = (orderId: string, action: string, body: Json = {}) =>
  stack.service.api<Json>("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey, body });

/** The order's timer jobs pg-boss holds (a short window's timer may already be firing: any state). */
async function timerJobs(orderId: string): Promise<{ timer: string; dueAt: string }[]> {
  const { rows } = await stack.service.pool.query<{ timer: string; dueAt: string }>(
    `SELECT data->>'timer' AS timer, data->>'dueAt' AS "dueAt" FROM pgboss.job WHERE name = 'orders.timer' AND data->>'orderId' = $1 ORDER BY created_on`,
    [orderId],
  );
  return rows;
}

async function eventTypes(orderId: string): Promise<string[]> {
  const { rows } = await stack.service.pool.query<{ event_type: string }>("SELECT event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [orderId]);
  return rows.map((row) => row.event_type);
}

test("an ACTIVE order nobody locks before the listing expires is refunded on chain and ends EXPIRED", async () => {
  const order = await placeOrder(stack);
  await sandbox(order.id, "deposit");
  await waitForStatus(stack, order.id, "ACTIVE");
  const detail = await waitForStatus(stack, order.id, "EXPIRED", 40_000);
  assert.match(String(detail.refundTxHash), /^0x[0-9a-f]{64}$/);
  assert.equal(await stack.service.chain!.gateway.escrowStatus(String(detail.escrowOrderId) as Hex), "Refunded");
  assert.deepEqual(await eventTypes(order.id), ["order.created", "order.deposit_confirmed", "order.expired"]);
  const timeline = (detail.timeline as { event: string }[]).map((entry) => entry.event);
  assert.deepEqual(timeline, ["CREATED", "DEPOSIT_CONFIRMED", "LISTING_EXPIRY_REQUESTED", "EXPIRED"]);
});

test("a LOCKED order with no payment before the lock expires is refunded to the seller and ends REFUNDED", async () => {
  const order = await placeOrder(stack);
  await sandbox(order.id, "deposit");
  await waitForStatus(stack, order.id, "ACTIVE");
  assert.equal((await sandbox(order.id, "lock")).status, 200);
  await waitForStatus(stack, order.id, "LOCKED");
  const detail = await waitForStatus(stack, order.id, "REFUNDED", 40_000);
  assert.deepEqual(await eventTypes(order.id), ["order.created", "order.deposit_confirmed", "order.locked", "order.lock_expired", "order.refunded"]);
  // The refund's transition records two events in one statement: consecutive sequences, each payload with
  // its own, each with its delivery.
  const { rows: events } = await stack.service.pool.query<{ sequence: number; body: string; deliveries: number }>(
    "SELECT e.sequence, e.body, (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id AND d.sequence = e.sequence) AS deliveries FROM webhook_events e WHERE e.order_id = $1 ORDER BY e.sequence",
    [order.id],
  );
  assert.deepEqual(events.map((event) => [event.sequence, (JSON.parse(event.body) as { data: { sequence: number } }).data.sequence, event.deliveries]), [1, 2, 3, 4, 5].map((n) => [n, n, 1]));
  const rows = await waitForSettled("the refund", async () => (await stack.service.pool.query<{ action: string; status: string }>("SELECT action, status FROM chain_transactions WHERE order_id = $1", [order.id])).rows);
  assert.deepEqual(sentToChain(rows), [{ action: "refundExpiredLock", status: "MINED" }]);
  assert.match(String(detail.refundTxHash), /^0x[0-9a-f]{64}$/);
});

test("a timer that fires after the order moved on changes nothing", async () => {
  const order = await placeOrder(stack);
  await sandbox(order.id, "deposit");
  await waitForStatus(stack, order.id, "ACTIVE");
  // The deposit confirmed deleted the deposit timer (30 min), but a worker may already hold a timer as
  // the order moves on: fire it now.
  const result = await applyOrderEvent(stack.service.pool, orderEffectPorts(stack.service.boss), order.id, {
    type: "TIMER_FIRED",
    timer: "DEPOSIT_TIMEOUT",
    dueAt: String(order.expiresAt),
    at: new Date().toISOString(),
  });
  assert.equal(result.changed, false);
  assert.equal(result.status, "ACTIVE");
});

test("a timer not yet due is deleted by the transition that makes it moot, and the next one is queued", async () => {
  const order = await placeOrder(stack);
  assert.deepEqual(await timerJobs(order.id), [{ timer: "DEPOSIT_TIMEOUT", dueAt: String(order.expiresAt) }]);
  await sandbox(order.id, "deposit");
  const active = await waitForStatus(stack, order.id, "ACTIVE");
  assert.deepEqual(await timerJobs(order.id), [{ timer: "LISTING_TIMEOUT", dueAt: String(active.expiresAt) }]);
  assert.equal((await sandbox(order.id, "lock")).status, 200);
  const locked = await waitForStatus(stack, order.id, "LOCKED");
  assert.deepEqual(await timerJobs(order.id), [{ timer: "LOCK_TIMEOUT", dueAt: String(locked.lockExpiresAt) }]);
});

test("a timer started again by a retried transition is one job", async () => {
  const order = await placeOrder(stack);
  const ports = orderEffectPorts(stack.service.boss);
  const timer = { orderId: order.id, timer: "DEPOSIT_TIMEOUT" as const, dueAt: String(order.expiresAt) };
  await ports.startTimer(stack.service.pool, timer);
  assert.deepEqual(await timerJobs(order.id), [{ timer: "DEPOSIT_TIMEOUT", dueAt: String(order.expiresAt) }]);
});

test("a timer a worker already holds when the transition deletes it is gone, and the worker's completion and firing change nothing", async () => {
  const order = await placeOrder(stack);
  const timer = { orderId: order.id, timer: "DEPOSIT_TIMEOUT" as const, dueAt: String(order.expiresAt) };
  const jobId = timerJobId(timer);
  // What a worker's fetch does to the job it takes (its deadline is half an hour away, so none has).
  const { rowCount } = await stack.service.pool.query("UPDATE pgboss.job SET state = 'active', started_on = now() WHERE name = $1 AND id = $2 AND state = 'created'", [ORDER_TIMER_QUEUE, jobId]);
  assert.equal(rowCount, 1);
  await sandbox(order.id, "deposit");
  await waitForStatus(stack, order.id, "ACTIVE");
  assert.deepEqual((await timerJobs(order.id)).map((job) => job.timer), ["LISTING_TIMEOUT"], "the held deposit timer deleted with the others");

  // The worker's handler fires it into an order that has moved on, then settles the job, which is gone.
  const fired = await applyOrderEvent(stack.service.pool, orderEffectPorts(stack.service.boss), order.id, { type: "TIMER_FIRED", ...timer, at: new Date().toISOString() });
  assert.deepEqual([fired.changed, fired.status], [false, "ACTIVE"]);
  // pg-boss answers how many jobs a settle touched (its CommandResponse type declares none of it).
  const affected = (response: object) => (response as { affected: number }).affected;
  assert.equal(affected(await stack.service.boss.complete(ORDER_TIMER_QUEUE, jobId)), 0);
  assert.equal(affected(await stack.service.boss.fail(ORDER_TIMER_QUEUE, jobId, new Error("as a handler that threw"))), 0);
  assert.equal((await waitForStatus(stack, order.id, "ACTIVE")).status, "ACTIVE");
});

test("transitions applied together in one transaction (a block's deposits) queue their timers and deliveries in one statement each", async () => {
  const orders = [await placeOrder(stack), await placeOrder(stack), await placeOrder(stack)];
  const listingExpiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const client = await stack.service.pool.connect();
  const jobStatements: string[] = [];
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const counted = Object.assign(Object.create(client) as PoolClient, {
    query: (...args: unknown[]) => {
      const text = typeof args[0] === "string" ? args[0] : (args[0] as { text: string }).text;
      if (text.includes("pgboss")) jobStatements.push(text);
      return query(...args);
    },
  });
  try {
    await client.query("BEGIN");
    const gathering = orderEffectPorts(stack.service.boss).gatheringJobs(counted);
    for (const [n, order] of orders.entries()) {
      const event = { type: "DEPOSIT_CONFIRMED" as const, txHash: `0x${String(n + 1).padStart(64, "0")}`, seller: "0x000000000000000000000000000000000000dEaD", listingExpiresAt, at: new Date().toISOString() };
      assert.equal((await applyOrderEvent(stack.service.pool, gathering.ports, order.id, event, { tx: counted })).status, "ACTIVE");
    }
    assert.deepEqual(jobStatements, [], "no job is written before the flush");
    await gathering.flush();
    await client.query("COMMIT");
  } finally {
    client.release();
  }
  assert.equal(jobStatements.length, 3, "the deliveries' insert, the listing timers' insert, the deposit timers' delete");
  for (const order of orders) {
    assert.deepEqual(await timerJobs(order.id), [{ timer: "LISTING_TIMEOUT", dueAt: listingExpiresAt }]);
    const { rows } = await stack.service.pool.query<{ queued: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.name = $2 AND j.data->>'deliveryId' = d.id) AS queued
         FROM webhook_deliveries d WHERE d.order_id = $1 AND d.event_type = 'order.deposit_confirmed'`,
      [order.id, DELIVERY_QUEUE],
    );
    assert.deepEqual(rows.map((row) => row.queued), [true], "order.deposit_confirmed recorded with its delivery's job");
  }
});
