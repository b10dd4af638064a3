// A transition that makes a timer moot deletes its job by id (orders/machine.ts `cancelPendingTimers`), in
// nearly every transition of a trade, while the timer queue holds a timer for every open order. Found in
// figure 5's sampled plans (docs/benchmarks.md, stop 70): run as a prepared statement, pg-boss's delete by
// id took a generic plan that read the queue's every job through (name, created_on), 1.43 ms a call.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { jobWritesAtOnce } from "../../src/jobs/job-writes.ts";
import { CHAIN_SEND_QUEUE, createOrderQueues, ORDER_TIMER_QUEUE } from "../../src/jobs/queues.ts";
import { createTestDatabase } from "../support/database.ts";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
let boss: PgBoss;

before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  // No supervisor, monitor or schedule: nothing but the test reads the job table while it counts.
  boss = new PgBoss({ connectionString: database.url, schema: "pgboss", supervise: false, schedule: false });
  await boss.start();
  await createOrderQueues(boss);
});
after(async () => {
  await boss?.stop({ graceful: false });
  await pool?.end();
  await database?.drop();
});

const timers = (count: number) => Array.from({ length: count }, () => ({ id: crypto.randomUUID(), data: {}, startAfter: new Date(Date.now() + 3_600_000) }));

/**
 * Rows and index entries of the queues' job table read so far, by every session (flushed by each at its
 * next idle moment): its sequential scans' rows and its indexes' entries.
 */
async function rowsRead(): Promise<number> {
  const { rows } = await pool.query<{ read: string }>(
    `SELECT t.seq_tup_read + (SELECT coalesce(sum(i.idx_tup_read), 0) FROM pg_stat_user_indexes i WHERE i.relid = t.relid) AS read
       FROM pg_stat_user_tables t WHERE t.schemaname = 'pgboss' AND t.relname = 'job_common'`,
  );
  return Number(rows[0]!.read);
}

test("a cancelled timer's job is found by its id, not by reading every timer the queue holds", async () => {
  const writes = jobWritesAtOnce(boss, pool);
  // Statistics and plans made while the table was nearly empty: the tables analyzed before a busy hour, and
  // a session whose first cancels came early in it (a prepared statement keeps its plan for the session).
  const early = timers(8);
  await writes.insert(ORDER_TIMER_QUEUE, [...early, ...timers(10)]);
  await writes.insert(CHAIN_SEND_QUEUE, Array.from({ length: 10 }, () => ({ data: {} })));
  await pool.query("ANALYZE pgboss.job_common");
  const session = await pool.connect();
  try {
    // More calls than PostgreSQL's five custom plans before it may keep a prepared statement's generic one.
    for (const timer of early) await jobWritesAtOnce(boss, session).delete(ORDER_TIMER_QUEUE, [timer.id]);
    // The busy hour: a timer for each of 3,000 open orders.
    const cancelled = timers(12);
    await writes.insert(ORDER_TIMER_QUEUE, [...timers(3000), ...cancelled]);

    await session.query("SELECT pg_stat_force_next_flush()");
    const before = await settledCount();
    for (const timer of cancelled) await jobWritesAtOnce(boss, session).delete(ORDER_TIMER_QUEUE, [timer.id]);
    await session.query("SELECT pg_stat_force_next_flush()");
    const read = await waitForCounts(before);
    assert.ok(read < 1000, `the 12 deletes read ${read} rows and index entries of the job table`);
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND id = ANY($2::uuid[])", [ORDER_TIMER_QUEUE, cancelled.map((timer) => timer.id)]);
    assert.equal(rows[0]!.n, 0);
  } finally {
    session.release();
  }
});

/** rowsRead once the early deletes' counts have reached the shared statistics (it stops moving). */
async function settledCount(): Promise<number> {
  let last = await rowsRead();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = await rowsRead();
    if (now === last) return now;
    last = now;
  }
}

/** The rows and entries read since `before`, once the deleting session's counts (12 at least: one a delete) have reached the shared statistics. */
async function waitForCounts(before: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const read = (await rowsRead()) - before;
    if (read >= 12) return read;
    if (Date.now() > deadline) throw new Error(`the deletes' reads never reached the statistics (${read} so far)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
