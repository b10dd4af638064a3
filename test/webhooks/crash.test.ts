// At-least-once under a crash: the delivery worker is killed with SIGKILL while partners' endpoints hold
// its requests; a new worker process delivers every event, under its one delivery id, none lost.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { PgBoss } from "pg-boss";
import { after, before, test } from "node:test";
import { migrate } from "../../src/db/migrate.ts";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { createPartner } from "../../src/partners/partners.ts";
import { ensureDeliveryQueues } from "../../src/jobs/queues.ts";
import { createTestDatabase } from "../support/database.ts";
import { createOrderFixture, emit } from "./support/fixtures.ts";
import { startReceiver, waitFor, type TestReceiver } from "./support/receiver.ts";

const TIMEOUT_MS = 5000;
const workerScript = fileURLToPath(new URL("./support/delivery-worker-process.ts", import.meta.url));

let database: { url: string; drop(): Promise<void> };
let pool: Pool;
let boss: PgBoss;
let receiver: TestReceiver;
const children: ChildProcess[] = [];
/** While true the endpoint holds every request unanswered, as a slow partner would. */
let holding = true;

before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  pool = createPool(database.url);
  // This process only records events; it runs no worker and no supervisor.
  boss = new PgBoss({ connectionString: database.url, schema: "pgboss", supervise: false, schedule: false });
  await boss.start();
  await ensureDeliveryQueues(boss, TIMEOUT_MS);
  receiver = await startReceiver(() => (holding ? "hang" : 200));
});
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, "exit") : undefined)));
  await receiver.close();
  await boss.stop({ graceful: false });
  await pool.end();
  await database.drop();
});

async function startWorker(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [workerScript], {
    env: { ...process.env, DATABASE_URL: database.url, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_RETRY_DELAYS_SECONDS: "1,1,1,1,1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await waitFor("the worker to be ready", () => output.includes("ready") || child.exitCode !== null, 20_000);
  assert.equal(child.exitCode, null, "the worker started");
  return child;
}

test("after a SIGKILL of the worker mid-delivery, a new worker delivers every event under its one id", async () => {
  const created = await createPartner(pool, { name: "Crash Partner", tier: "GROWTH", kycModel: "PARTNER_MANAGED", webhookUrl: receiver.url });
  const orderA = await createOrderFixture(pool, created.partner.id);
  const orderB = await createOrderFixture(pool, created.partner.id);

  const first = await startWorker();
  const a1 = await emit({ pool, boss }, orderA, "order.created", "PENDING_DEPOSIT");
  const a2 = await emit({ pool, boss }, orderA, "order.expired", "EXPIRED");
  const b1 = await emit({ pool, boss }, orderB, "order.created", "PENDING_DEPOSIT");
  const ids = [a1.deliveryId!, a2.deliveryId!, b1.deliveryId!];

  // The worker is mid-delivery: A1 and B1 are on the wire, A2 waits for A1's first attempt.
  await waitFor("two held requests", () => receiver.requests.length === 2);
  first.kill("SIGKILL");
  await once(first, "exit");
  assert.equal(first.signalCode, "SIGKILL");

  const { rows: afterKill } = await pool.query<{ id: string; status: string; attempts: number }>(
    "SELECT id, status, attempts FROM webhook_deliveries ORDER BY sequence, id",
  );
  assert.ok(afterKill.every((d) => d.status === "PENDING" && d.attempts === 0), `after the kill: ${JSON.stringify(afterKill)}`);

  holding = false;
  await startWorker();
  const delivered = await waitFor("every delivery DELIVERED", async () => {
    const { rows } = await pool.query<{ id: string; status: string; attempts: number }>("SELECT id, status, attempts FROM webhook_deliveries");
    return rows.length === 3 && rows.every((d) => d.status === "DELIVERED") ? rows : undefined;
  }, 60_000);
  assert.deepEqual(delivered.map((d) => d.attempts), [1, 1, 1]);

  // Every request carried one of the three delivery ids and that delivery's stored body, byte for byte.
  const bodies = new Map([[a1.deliveryId!, a1.body], [a2.deliveryId!, a2.body], [b1.deliveryId!, b1.body]]);
  for (const request of receiver.requests) {
    const id = String(request.headers["x-webhook-id"]);
    assert.ok(ids.includes(id), `unexpected id ${id}`);
    assert.equal(request.rawBody, bodies.get(id));
  }
  // Each was answered 200 at least once; the two interrupted ones were sent again under the same id.
  for (const id of ids) {
    const forId = receiver.requests.filter((r) => r.headers["x-webhook-id"] === id);
    assert.ok(forId.some((r) => r.respondedAt !== undefined), `${id} answered`);
  }
  assert.equal(receiver.requests.filter((r) => r.headers["x-webhook-id"] === a1.deliveryId).length, 2);
  assert.equal(receiver.requests.filter((r) => r.headers["x-webhook-id"] === b1.deliveryId).length, 2);
  // Order is kept through the crash: A2 went out only after A1's first completed attempt.
  const a1Answered = receiver.requests.find((r) => r.headers["x-webhook-id"] === a1.deliveryId && r.respondedAt)!;
  const a2First = receiver.requests.find((r) => r.headers["x-webhook-id"] === a2.deliveryId)!;
  assert.ok(a2First.receivedAt >= a1Answered.respondedAt!);
});
