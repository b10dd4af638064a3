// Found by `npm run chaos`: a timer job held by a worker that was SIGKILLed stayed "active" for
// pg-boss's default expiry (15 minutes) before it was retried, so an order's deposit expiry or lock
// refund came 15 minutes late. Every order queue now gives a held job back within a short expiry;
// the service applies it on start.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CHAIN_SEND_QUEUE, ORDER_TIMER_QUEUE, PAYMENT_VERIFY_QUEUE } from "../../src/jobs/queues.ts";
import type { TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";

let service: TestService;

before(async () => {
  service = await startOfflineOrderService();
});

after(async () => {
  await service?.close();
});

test("a job held by a killed worker is retried within two minutes on every order queue", async () => {
  const { rows } = await service.pool.query<{ name: string; expire_seconds: number }>("SELECT name, expire_seconds FROM pgboss.queue WHERE name = ANY($1)", [
    [ORDER_TIMER_QUEUE, CHAIN_SEND_QUEUE, PAYMENT_VERIFY_QUEUE],
  ]);
  assert.equal(rows.length, 3);
  for (const row of rows) assert.ok(row.expire_seconds <= 120, `${row.name} expires held jobs after ${row.expire_seconds} s`);
});
