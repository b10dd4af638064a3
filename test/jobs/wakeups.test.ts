import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { inTransaction, startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";

// Workers are woken by a NOTIFY sent with each job (pg-boss's LISTEN/NOTIFY), on every instance, when the
// sending transaction commits. The workers here poll once a minute: a job they handle within seconds was
// announced, not polled for.
const QUEUE = "wakeup-test";
const POLL_SECONDS = 60;

let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let sender: PgBoss;
let worker: PgBoss;
const handled: { id: string; at: number }[] = [];

before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url });
  const logger = createLogger("silent");
  // Two instances: the job is written by one and handled by the other's worker.
  sender = await startJobs(database.url, logger);
  worker = await startJobs(database.url, logger);
  await sender.createQueue(QUEUE, { notify: true });
  await worker.work<{ id: string }>(QUEUE, { pollingIntervalSeconds: POLL_SECONDS, notifyPollingIntervalSeconds: POLL_SECONDS }, async ([job]) => {
    handled.push({ id: job!.data.id, at: Date.now() });
  });
  // The first poll runs at once: let it pass, so that the jobs below wait for a wake-up.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
});
after(async () => {
  await worker?.stop({ graceful: false });
  await sender?.stop({ graceful: false });
  await pool?.end();
  await database?.drop();
});

async function waitForHandled(id: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (handled.some((entry) => entry.id === id)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Sends a job inside a transaction of the service's kind (inTransaction), then ends it with `end`. */
async function sendInTransaction(id: string, end: "COMMIT" | "ROLLBACK"): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await sender.send(QUEUE, { id }, inTransaction(client));
    await client.query(end);
  } finally {
    client.release();
  }
}

test("a job sent in a committed transaction wakes another instance's worker long before its next poll", async () => {
  await sendInTransaction("committed", "COMMIT");
  assert.ok(await waitForHandled("committed", 15_000), `not handled within 15 s (the worker polls every ${POLL_SECONDS} s)`);
});

test("a job sent in a rolled-back transaction neither exists nor is handled", async () => {
  await sendInTransaction("rolled-back", "ROLLBACK");
  await sender.send(QUEUE, { id: "after-rollback" });
  assert.ok(await waitForHandled("after-rollback", 15_000));
  assert.equal(handled.filter((entry) => entry.id === "rolled-back").length, 0);
});
