// The escrow event consumer writes a group's jobs (timers, first delivery attempts) together before its
// commit (src/jobs/job-writes.ts). A connection lost right there takes the group's transitions back with
// its jobs: the events are applied again, and each order ends with its jobs exactly once.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { placeOrder, startChainStack, waitFor, waitForStatus, type ChainStack } from "../support/trade-stack.ts";
import { startPgFront, type PgFront } from "../support/wire-count.ts";

let chain: ChainStack;
let front: PgFront;
let service: TestService;
let pool: Pool;
/** The partner's webhook bodies as received. */
const received: { event: string; data: { orderId: string } }[] = [];
const receiver = http.createServer((request, response) => {
  let body = "";
  request.on("data", (chunk: Buffer) => (body += chunk.toString()));
  request.on("end", () => {
    received.push(JSON.parse(body) as (typeof received)[number]);
    response.end();
  });
});

before(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  chain = await startChainStack({ mining: "auto" });
  front = await startPgFront(chain.databaseUrl);
  service = await startTestService({}, { databaseUrl: front.url, indexerSchema: chain.indexerSchema, chain: chain.chainSettings });
  pool = createPool(chain.databaseUrl, 2);
});
after(async () => {
  await pool?.end();
  await service?.close();
  await front?.close();
  await chain?.close();
  receiver.closeAllConnections();
  receiver.close();
});

test("a connection lost at a group's job writes takes the group back, and its events applied again leave each job once", async () => {
  const partner = await service.createPartner({ tier: "ENTERPRISE", webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` });
  const stack = { service, partner };
  const order = await placeOrder(stack);
  // The consumer's transaction: the event's once-only mark, then (at the flush) the jobs' statements.
  const cut = front.cutBefore((statement, transaction) => statement.includes("pgboss") && transaction.some((earlier) => earlier.includes("applied_chain_events")));
  const deposit = await service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: partner.apiKey, body: {} });
  assert.ok(deposit.status < 300, JSON.stringify(deposit.body));
  const lost = await cut;
  assert.match(lost, /pgboss/);
  const active = await waitForStatus(stack, order.id, "ACTIVE");

  const { rows: timers } = await pool.query<{ timer: string }>("SELECT data->>'timer' AS timer FROM pgboss.job WHERE name = 'orders.timer' AND data->>'orderId' = $1", [order.id]);
  assert.deepEqual(timers.map((row) => row.timer), ["LISTING_TIMEOUT"], "the deposit timer deleted and the listing timer queued, once");
  // Every event delivered once: its first attempt was queued by the events applied again, not lost with the cut.
  await waitFor("order.deposit_confirmed to be delivered", async () => (received.some((hook) => hook.data.orderId === order.id && hook.event === "order.deposit_confirmed") ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  assert.deepEqual(received.filter((hook) => hook.data.orderId === order.id).map((hook) => hook.event), ["order.created", "order.deposit_confirmed"]);
  const { rows: applied } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM applied_chain_events WHERE order_id = $1", [order.id]);
  assert.equal(applied[0]!.n, 1, "the deposit applied once");
  assert.deepEqual(
    (active.timeline as { event: string }[]).map((entry) => entry.event),
    ["CREATED", "DEPOSIT_CONFIRMED"],
  );
});
