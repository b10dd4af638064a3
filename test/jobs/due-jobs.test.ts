import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { JOB_DUE_INDEX, startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { DUE_FIRST } from "../../src/jobs/queues.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";
import { explainedRun } from "../support/query-plans.ts";
import { onFetches, within } from "./support/fetches.ts";

// A queue of order timers holds every open order's deadline, hours to a day ahead. Its workers fetch the
// jobs that fell due first (DUE_FIRST, patches/pg-boss+12.38.0.patch) through JOB_DUE_INDEX: a fetch reads
// the due jobs and stops, whatever number of jobs are deferred to later. In pg-boss's own order
// (priority, then creation) each fetch read past every deferred job created before the due ones.
const DEFERRED = 5_000;

let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let boss: PgBoss;

before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url });
  boss = await startJobs(database.url, createLogger("silent"));
});
after(async () => {
  await boss?.stop({ graceful: false });
  await pool?.end();
  await database?.drop();
});

/** A queue holding `DEFERRED` jobs due in a day, created before anything the test sends. */
async function queueWithDeferredJobs(name: string): Promise<void> {
  await boss.createQueue(name);
  const tomorrow = new Date(Date.now() + 86_400_000);
  for (let i = 0; i < DEFERRED; i += 1_000) {
    await boss.insert(name, Array.from({ length: 1_000 }, (_, j) => ({ data: { id: `deferred-${i + j}` }, startAfter: tomorrow })));
  }
}

/** The SQL of the next fetch of `name` that the instance sends to the database, and its parameters. */
function nextFetch(name: string): Promise<{ text: string; values: unknown[] }> {
  return new Promise((resolve) => {
    const stop = onFetches(boss, name, (text, values) => {
      stop();
      resolve({ text, values });
    });
  });
}

test("the due-time index is on every partition of pg-boss's job table", async () => {
  const { rows } = await pool.query<{ partitions: number; indexed: number }>(
    `SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgboss.job'::regclass)::int AS partitions,
            (SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1))::int AS indexed`,
    [`pgboss.${JOB_DUE_INDEX}`],
  );
  assert.ok(rows[0]!.partitions >= 1);
  assert.equal(rows[0]!.indexed, rows[0]!.partitions);
});

test("instances starting at once on a new database all start, with one due-time index", { timeout: 60_000 }, async () => {
  const fresh = await createTestDatabase();
  const instances = await Promise.allSettled([1, 2, 3].map(() => startJobs(fresh.url, createLogger("silent"))));
  try {
    assert.deepEqual(instances.map((instance) => instance.status), ["fulfilled", "fulfilled", "fulfilled"]);
    const session = new pg.Client({ connectionString: fresh.url });
    await session.connect();
    const { rows } = await session.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 'pgboss' AND indexname = $1", [JOB_DUE_INDEX]);
    await session.end();
    assert.equal(rows[0]!.n, 1);
  } finally {
    for (const instance of instances) if (instance.status === "fulfilled") await instance.value.stop({ graceful: false });
    await fresh.drop();
  }
});

test("a due-first worker takes the job that fell due first, not the one created first", async () => {
  const name = "due-order";
  await boss.createQueue(name);
  const now = Date.now();
  // Created first, due now; created second, due a minute ago.
  await boss.insert(name, [{ data: { id: "created-first" }, startAfter: new Date(now) }]);
  await boss.insert(name, [{ data: { id: "due-first" }, startAfter: new Date(now - 60_000) }]);
  const handled: string[] = [];
  await boss.work<{ id: string }>(name, { ...DUE_FIRST, batchSize: 1, localConcurrency: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
    handled.push(job!.data.id);
  });
  await within(15_000, () => handled.length === 2);
  assert.deepEqual(handled, ["due-first", "created-first"]);
});

test(`a due-first worker's fetch reads the due jobs only, with ${DEFERRED} jobs deferred to later`, async () => {
  const name = "due-fetch";
  await queueWithDeferredJobs(name);
  await boss.insert(name, [{ data: { id: "due" } }]);
  const fetch = nextFetch(name);
  const handled: string[] = [];
  await boss.work<{ id: string }>(name, { ...DUE_FIRST, batchSize: 5, pollingIntervalSeconds: 60 }, async (jobs) => {
    for (const job of jobs) handled.push(job.data.id);
  });
  const { text, values } = await fetch;
  await within(15_000, () => handled.includes("due"));
  assert.deepEqual(handled, ["due"]);
  // The same statement again, once the worker's own has run, explained and undone: its plan and the buffers it read.
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const { indexes, buffers } = await explainedRun(client, text, values);
    assert.ok(!indexes.some((index) => index.includes("_i11")), `fetched through pg-boss's creation-order index: ${indexes.join(", ")}`);
    assert.ok(buffers <= 20, `read ${buffers} buffers`);
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
});
