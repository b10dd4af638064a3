import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { inTransaction, startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";
import { onFetches, within } from "./support/fetches.ts";

// Workers are woken by a NOTIFY sent with each job (pg-boss's LISTEN/NOTIFY), on every instance, when the
// sending transaction commits (patches/pg-boss+12.38.0.patch): in the instance that sent it, one worker of
// the queue, which wakes the next when its fetch came back full; in another, one idle worker, at once
// unless that instance fetched the queue within its polling interval or the last second (then at that
// window's end: the job is meanwhile its sender's to take). The workers here poll once a minute: a job
// they handle within seconds was announced, not polled for.
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

const waitForHandled = (id: string, withinMs: number) => within(withinMs, () => handled.some((entry) => entry.id === id));

/** Sends jobs through `from` inside one transaction of the service's kind (inTransaction), then ends it with `end`. */
async function sendInTransaction(ids: string[], end: "COMMIT" | "ROLLBACK", queue = QUEUE, from = sender): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (const id of ids) await from.send(queue, { id }, inTransaction(client));
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

test("a job's NOTIFY wakes one idle worker of its queue in the instance that sent it, not each of them (patches/pg-boss+12.38.0.patch)", async () => {
  const name = "wakeup-one";
  const seen: string[] = [];
  await queueWithWorkers(name, 4, async (id) => void seen.push(id));
  const sent = Date.now();
  await sendInTransaction(["only"], "COMMIT", name, worker);
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
  await sendInTransaction(ids, "COMMIT", name, worker);
  assert.ok(await within(2_500, () => started.size === ids.length), `${started.size} of ${ids.length} started within 2.5 s`);
});

/** Counts the fetches of `name` that reach the database from the worker instance. */
function countFetches(name: string): { count: () => number } {
  let fetches = 0;
  onFetches(worker, name, () => fetches++);
  return { count: () => fetches };
}

test("another instance's job does not make an instance fetch at once a queue it fetched within the last second: the sender's worker takes it (patches/pg-boss+12.38.0.patch)", async () => {
  const name = "foreign-notify";
  const handledBy: string[] = [];
  await queueWithWorkers(name, 2, async () => void handledBy.push("worker's instance"));
  await sender.work<{ id: string }>(name, { pollingIntervalSeconds: POLL_SECONDS, notifyPollingIntervalSeconds: POLL_SECONDS }, async () => void handledBy.push("sender"));
  const fetches = countFetches(name);
  // The worker's instance fetches the queue for a job of its own, then, within the second, the sender sends one.
  await sendInTransaction(["own"], "COMMIT", name, worker);
  assert.ok(await within(5_000, () => handledBy.length === 1), "the worker instance's own job handled");
  const before = fetches.count();
  await sendInTransaction(["foreign"], "COMMIT", name);
  assert.ok(await within(5_000, () => handledBy.length === 2), "the sender's job handled");
  assert.equal(handledBy[1], "sender");
  assert.equal(fetches.count() - before, 0, "the worker's instance fetched for the sender's job before the sender took it");
  // Its deferred poll, at most one, after the window.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  assert.ok(fetches.count() - before <= 1, `${fetches.count() - before} fetches after the window`);
});

test("the idle workers of a queue poll it once a polling interval between them, not each of them (patches/pg-boss+12.38.0.patch)", async () => {
  const name = "idle-polls";
  const fetches = countFetches(name);
  await sender.createQueue(name, { notify: true });
  await worker.work<{ id: string }>(name, { localConcurrency: 4, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 }, async () => undefined);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const before = fetches.count();
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  const polls = fetches.count() - before;
  // Each of the 4 workers polling on its own would be about 24 in these 6 s.
  assert.ok(polls >= 4 && polls <= 8, `${polls} fetches in 6 s by 4 idle workers polling every second`);
});

test("while a worker is busy, a job falling due is polled for by an idle one within about an interval", async () => {
  const name = "busy-and-due";
  const done = new Map<string, number>();
  await sender.createQueue(name, { notify: true });
  await worker.work<{ id: string }>(name, { localConcurrency: 2, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 }, async ([job]) => {
    if (job!.data.id === "long") await new Promise((resolve) => setTimeout(resolve, 8_000));
    done.set(job!.data.id, Date.now());
  });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await sender.send(name, { id: "long" });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const due = Date.now() + 2_000;
  await sender.send(name, { id: "due" }, { startAfter: 2 });
  assert.ok(await within(6_000, () => done.has("due")), "the due job waited for the busy worker");
  assert.ok(!done.has("long"), "handled while the other worker was still busy");
  assert.ok(done.get("due")! - due < 3_000, `handled ${done.get("due")! - due} ms after it fell due`);
});
