// The escrow event consumer applies a batch's events on several sessions at once, each order's events in
// one lane in chain order (src/sync/escrow-events.ts): a chain whose blocks hold many trades' events keeps
// one session busy all the time (docs/benchmarks.md, stop 50). Real local chain, Ponder and service.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "../../src/logger.ts";
import { APPLY_LANES, createEscrowEventConsumer, lanesOf } from "../../src/sync/escrow-events.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { placeOrder, startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({}, {}, { mining: "auto" });
});
after(() => stack?.close());

async function sandbox(orderId: string, action: string): Promise<void> {
  const response = await stack.service.api("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey });
  assert.equal(response.status, 200, `${action}: ${JSON.stringify(response.body)}`);
}

test("a batch's events are split by order: each order's events in one lane, in chain order, orders dealt round the lanes", () => {
  const rows = ["a", "b", "a", "c", "d", "e", "b", null].map((order, n) => ({ n, order_id: order }));
  const lanes = lanesOf(rows, 4).map((lane) => lane.map((row) => row.n));
  assert.deepEqual(lanes, [[0, 2, 5], [1, 6, 7], [3], [4]]);
});

test(`the locks of ${APPLY_LANES} orders read in one batch are applied on ${APPLY_LANES} sessions at once`, async () => {
  const orders: Awaited<ReturnType<typeof placeOrder>>[] = [];
  for (let i = 0; i < APPLY_LANES; i++) {
    const order = await placeOrder(stack);
    await sandbox(order.id, "deposit");
    await waitForStatus(stack, order.id, "ACTIVE");
    orders.push(order);
  }
  // The service's consumer stops here, so the locks wait in the indexer for one batch of the consumer below.
  await stack.service.chain!.consumer!.stop();
  for (const order of orders) await sandbox(order.id, "lock");
  await waitFor("every lock indexed", async () => {
    const { rows } = await stack.service.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${stack.indexerSchema}".escrow_event WHERE event_name = 'Locked' AND order_id = ANY($1)`,
      [orders.map((order) => order.escrowOrderId.toLowerCase())],
    );
    return rows[0]!.n === orders.length ? true : undefined;
  });

  // Each lock's application asks for the escrow's refund grace period: held here until every lane waits in
  // it at once, or 3 s (applied one after another, the most waiting at once would be 1).
  let waiting = 0;
  let mostAtOnce = 0;
  let allWaiting!: () => void;
  const everyLane = new Promise<void>((resolve) => (allWaiting = resolve));
  const consumer = createEscrowEventConsumer({
    pool: stack.service.pool,
    ports: orderEffectPorts(stack.service.boss),
    logger: createLogger("silent"),
    indexerSchema: stack.indexerSchema,
    confirmations: 0,
    refundGraceSeconds: async () => {
      waiting += 1;
      mostAtOnce = Math.max(mostAtOnce, waiting);
      if (waiting === APPLY_LANES) allWaiting();
      await Promise.race([everyLane, sleep(3_000)]);
      waiting -= 1;
      return 3_600;
    },
  });
  await consumer.pollOnce();
  assert.equal(mostAtOnce, APPLY_LANES);
  for (const order of orders) assert.equal((await waitForStatus(stack, order.id, "LOCKED")).status, "LOCKED");
});
