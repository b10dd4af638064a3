// At start the payment verification worker finds the LOCKED orders whose payment reports are being
// verified (ORDERS_VERIFYING_PAYMENTS) through the partial index of migration 1764500000400, so a start
// reads those orders alone, however many orders are stored: 20,000 orders in the shape POST /orders writes
// (the bench's bulk insert), a fifth of them LOCKED, ANALYZE, then EXPLAIN of that very statement.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ORDERS_VERIFYING_PAYMENTS } from "../../src/workers/payment-verification.ts";
import type { TestService } from "../support/service.ts";
import { startServiceWithBulkOrders } from "../support/bulk-orders.ts";

let service: TestService;
before(async () => {
  service = await startServiceWithBulkOrders({
    partnerName: "Verification Partner",
    tag: "verifying",
    mix: [
      { status: "COMPLETED", percent: 75 },
      { status: "LOCKED", percent: 20 },
      { status: "EXPIRED", percent: 5 },
    ],
  });
});
after(async () => {
  await service?.close();
});

test("the LOCKED orders with payments being verified are read from their own index, not from every LOCKED order's snapshot", async () => {
  const { rows } = await service.pool.query<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${ORDERS_VERIFYING_PAYMENTS}`);
  const plan = JSON.stringify(rows[0]!["QUERY PLAN"]);
  assert.match(plan, /"Index Name":"orders_verifying_payments"/, plan);
  assert.doesNotMatch(plan, /Seq Scan/, plan);
});

test("an order whose payment report is being verified is found, and one whose verification ended is not", async () => {
  const { rows: locked } = await service.pool.query<{ id: string }>("SELECT id FROM orders WHERE status = 'LOCKED' ORDER BY id LIMIT 2");
  const [verifying, ended] = locked.map((row) => row.id);
  const setReports = (orderId: string, count: number) =>
    service.pool.query("UPDATE orders SET machine_snapshot = jsonb_set(machine_snapshot, '{context,verifyingPayments}', $2::jsonb) WHERE id = $1", [
      orderId,
      JSON.stringify(Array.from({ length: count }, (_, i) => ({ cepTrackingKey: `TRACK${i}` }))),
    ]);
  await setReports(verifying!, 1);
  await setReports(ended!, 0);
  const { rows } = await service.pool.query<{ id: string }>(ORDERS_VERIFYING_PAYMENTS);
  assert.deepEqual(rows.map((row) => row.id), [verifying]);
});
