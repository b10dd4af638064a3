import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { inTransaction, startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";

// Workers are woken by a NOTIFY sent with each job (pg-boss's LISTEN/NOTIFY), on every instance, when the
// sending transaction commits: one worker of the queue an instance, which wakes the next when its fetch
// came back full (patches/pg-boss+12.38.0.patch). The workers here poll once a minute: a job they handle
// within seconds was announced, not polled for.
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

/** Whether `check` holds within `withinMs`. */
async function within(withinMs: number, check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const waitForHandled = (id: string, withinMs: number) => within(withinMs, () => handled.some((entry) => entry.id === id));

/** Sends jobs inside one transaction of the service's kind (inTransaction), then ends it with `end`. */
async function sendInTransaction(ids: string[], end: "COMMIT" | "ROLLBACK", queue = QUEUE): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (const id of ids) await sender.send(queue, { id }, inTransaction(client));
    await client.query(end);
  } finally {
    client.release();
  }
}

test("a job sent in a committed transaction wakes another instance's worker long before its next poll", async () => {
  await sendInTransaction(["committed"], "COMMIT");
  assert.ok(await waitForHandled("committed", 15_000), `not handled within 15 s (the worker polls every ${POLL_SECONDS} s)`);
});

test("a job sent in a rolled-back transaction neither exists nor is handled", async () => {
  await sendInTransaction(["rolled-back"], "ROLLBACK");
  await sender.send(QUEUE, { id: "after-rollback" });
  assert.ok(await waitForHandled("after-rollback", 15_000));
  assert.equal(handled.filter((entry) => entry.id === "rolled-back").length, 0);
});

/** Registers `workers` workers of a new queue on the worker instance, polling once a minute. */
async function queueWithWorkers(name: string, workers: number, handle: (id: string) => Promise<void>): Promise<void> {
  await sender.createQueue(name, { notify: true });
  await worker.work<{ id: string }>(name, { localConcurrency: workers, pollingIntervalSeconds: POLL_SECONDS, notifyPollingIntervalSeconds: POLL_SECONDS }, async ([job]) => handle(job!.data.id));
  // Past each worker's first poll, so that what follows waits for wake-ups.
  const polled = () => worker.getWipData().filter((data) => data.name === name && data.lastFetchedOn !== null).length === workers;
  assert.ok(await within(15_000, polled), "every worker polled once");
}

test("a job's NOTIFY wakes one idle worker of its queue, not each of them (patches/pg-boss+12.38.0.patch)", async () => {
  const name = "wakeup-one";
  const seen: string[] = [];
  await queueWithWorkers(name, 4, async (id) => void seen.push(id));
  const sent = Date.now();
  await sendInTransaction(["only"], "COMMIT", name);
  assert.ok(await within(15_000, () => seen.includes("only")), "not handled within 15 s");
  await new Promise((resolve) => setTimeout(resolve, 500));
  const fetched = worker.getWipData().filter((data) => data.name === name && (data.lastFetchedOn ?? 0) >= sent);
  // The woken worker's, which took the job, and the one it woke in case more had come (a full fetch).
  assert.equal(fetched.length, 2, `${fetched.length} of 4 workers fetched`);
});

test("the jobs of one transaction all start at once: each woken worker whose fetch came back full wakes the next", async () => {
  const name = "wakeup-batch";
  const started = new Map<string, number>();
  await queueWithWorkers(name, 5, async (id) => {
    started.set(id, Date.now());
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  });
  const ids = ["a", "b", "c", "d", "e"];
  await sendInTransaction(ids, "COMMIT", name);
  assert.ok(await within(2_500, () => started.size === ids.length), `${started.size} of ${ids.length} started within 2.5 s`);
});
