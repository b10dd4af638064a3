// The delivery rows are the delivery queue (migration 1764700000100): a delivery written due wakes the
// workers through the `webhook_delivery_due` notification at commit, not on their poll. A worker here
// polls once an hour, so only the notification can make it send within the test's wait.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PgBoss } from "pg-boss";
import { loadConfig } from "../../src/config.ts";
import { migrate } from "../../src/db/migrate.ts";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { dropRetiredQueues } from "../../src/jobs/queues.ts";
import { createLogger } from "../../src/logger.ts";
import { createPartner } from "../../src/partners/partners.ts";
import { redeliver } from "../../src/webhooks/deliveries.ts";
import { recordEvent } from "../../src/webhooks/outbox.ts";
import { startWebhookDelivery, type WebhookDelivery } from "../../src/workers/webhook-deliveries.ts";
import { createTestDatabase } from "../support/database.ts";
import { createOrderFixture, emit } from "./support/fixtures.ts";
import { sleep, startReceiver, waitFor, type TestReceiver } from "./support/receiver.ts";

let database: { url: string; drop(): Promise<void> };
let pool: Pool;
let receiver: TestReceiver;
let worker: WebhookDelivery;

before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  pool = createPool(database.url);
  receiver = await startReceiver(() => 200);
  const config = loadConfig({ SANDBOX: "true", WEBHOOK_RETRY_DELAYS_SECONDS: "3600" });
  worker = await startWebhookDelivery({ pool, databaseUrl: database.url, logger: createLogger("silent"), config, pollingIntervalSeconds: 3600 });
});
after(async () => {
  await worker.stop();
  await receiver.close();
  await pool.end();
  await database.drop();
});

async function partnerOrder() {
  const created = await createPartner(pool, { name: "Due Partner", tier: "GROWTH", kycModel: "PARTNER_MANAGED", webhookUrl: receiver.url });
  return createOrderFixture(pool, created.partner.id);
}

const requestsFor = (deliveryId: string) => receiver.requests.filter((r) => r.headers["x-webhook-id"] === deliveryId);

test("a delivery committed due is sent at once, on its notification", async () => {
  const event = await emit({ pool }, await partnerOrder(), "order.created", "PENDING_DEPOSIT");
  await waitFor("the delivery sent", () => requestsFor(event.deliveryId!).length === 1, 10_000);
});

test("a delivery recorded in a transaction is not sent before the transaction commits", async () => {
  const order = await partnerOrder();
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const event = await recordEvent(client, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} });
    await sleep(1_000);
    assert.equal(requestsFor(event.deliveryId!).length, 0, "nothing is sent while the transaction is open");
    await client.query("COMMIT");
    await waitFor("the delivery sent after the commit", () => requestsFor(event.deliveryId!).length === 1, 10_000);
  } finally {
    client.release();
  }
});

test("an operator's redelivery is sent at once, on its notification", async () => {
  const event = await emit({ pool }, await partnerOrder(), "order.created", "PENDING_DEPOSIT");
  await waitFor("the first attempt recorded", async () => {
    const { rows } = await pool.query<{ status: string }>("SELECT status FROM webhook_deliveries WHERE id = $1", [event.deliveryId]);
    return rows[0]?.status === "DELIVERED";
  }, 10_000);
  await redeliver(pool, event.deliveryId!);
  await waitFor("the redelivery sent", () => requestsFor(event.deliveryId!).length === 2, 10_000);
});

test("the pg-boss queues of one job an attempt, left by an earlier version, are dropped with their jobs and schedule", async () => {
  const boss = new PgBoss({ connectionString: database.url, schema: "pgboss", supervise: false, schedule: false });
  await boss.start();
  try {
    await boss.createQueue("webhooks.deliver");
    await boss.createQueue("webhooks.sweep");
    await boss.send("webhooks.deliver", { deliveryId: "whd_old", series: 1, attempt: 1 });
    await boss.schedule("webhooks.sweep", "* * * * *");
    await dropRetiredQueues(boss);
    const { rows } = await pool.query<{ queues: number; jobs: number; schedules: number }>(
      `SELECT (SELECT count(*) FROM pgboss.queue WHERE name LIKE 'webhooks.%')::int AS queues,
              (SELECT count(*) FROM pgboss.job WHERE name LIKE 'webhooks.%')::int AS jobs,
              (SELECT count(*) FROM pgboss.schedule WHERE name LIKE 'webhooks.%')::int AS schedules`,
    );
    assert.deepEqual(rows[0], { queues: 0, jobs: 0, schedules: 0 });
    await dropRetiredQueues(boss);
  } finally {
    await boss.stop({ graceful: false });
  }
});
