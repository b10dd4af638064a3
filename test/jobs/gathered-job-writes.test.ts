// Job writes gathered over one transaction (a block's escrow events applied together): written at the
// flush in one statement a queue, with the effect of each write made in its own order.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type pg from "pg";
import type { Queryable } from "../../src/db/pool.ts";
import type { PgBoss } from "../../src/jobs/boss.ts";
import { gatheredJobWrites, jobWritesAtOnce } from "../../src/jobs/job-writes.ts";
import { DELIVERY_QUEUE, ORDER_TIMER_QUEUE } from "../../src/jobs/queues.ts";
import { startQueuesDatabase } from "./support/queues-database.ts";

let queues: Awaited<ReturnType<typeof startQueuesDatabase>>;
let pool: pg.Pool;
let boss: PgBoss;

before(async () => {
  queues = await startQueuesDatabase(3);
  ({ pool, boss } = queues);
});
after(async () => {
  await queues?.close();
});

const later = () => new Date(Date.now() + 3_600_000);
const uuid = () => crypto.randomUUID();

/**
 * Runs `work` in a transaction on a session whose statements are counted, with the most of them asked for
 * at once (each asked for before the one before it was answered).
 */
async function inCountedTransaction(work: (tx: Queryable, statements: () => number, mostAtOnce: () => number) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  let count = 0;
  let inFlight = 0;
  let most = 0;
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const tx = {
    query: (...args: unknown[]) => {
      count += 1;
      most = Math.max(most, (inFlight += 1));
      return query(...args).finally(() => (inFlight -= 1));
    },
  } as Queryable;
  try {
    await client.query("BEGIN");
    await work(tx, () => count, () => most);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}

async function queued(queue: string, ids: string[]): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>("SELECT id::text FROM pgboss.job WHERE name = $1 AND id = ANY($2::uuid[]) ORDER BY id", [queue, ids]);
  return rows.map((row) => row.id);
}

test("gathered job writes reach the database only at the flush, in one statement a queue and kind", async () => {
  const cancelled = [uuid(), uuid()];
  await jobWritesAtOnce(boss, pool).insert(ORDER_TIMER_QUEUE, cancelled.map((id) => ({ id, data: { n: id }, startAfter: later() })));
  const timers = [uuid(), uuid(), uuid()];
  const deliveries = [uuid(), uuid(), uuid()];
  await inCountedTransaction(async (tx, statements, mostAtOnce) => {
    const writes = gatheredJobWrites(boss, tx);
    for (const [n, timer] of timers.entries()) {
      await writes.insert(DELIVERY_QUEUE, [{ id: deliveries[n]!, data: { deliveryId: `whd_${n}`, series: 1, attempt: 1 } }]);
      await writes.delete(ORDER_TIMER_QUEUE, cancelled.slice(n, n + 1));
      await writes.insert(ORDER_TIMER_QUEUE, [{ id: timer, data: { n }, startAfter: later() }]);
    }
    assert.equal(statements(), 0, "nothing is written before the flush");
    await writes.flush();
    assert.equal(statements(), 3, "one insert a queue, one delete");
    assert.equal(mostAtOnce(), 3, "writes of distinct ids are sent together, none waiting for another's answer");
  });
  assert.deepEqual(await queued(ORDER_TIMER_QUEUE, [...timers, ...cancelled]), [...timers].sort());
  assert.deepEqual(await queued(DELIVERY_QUEUE, deliveries), [...deliveries].sort());
});

test("a job cancelled and queued again under the same id in one flush stays queued, one queued then cancelled does not", async () => {
  const requeued = uuid();
  const dropped = uuid();
  await jobWritesAtOnce(boss, pool).insert(ORDER_TIMER_QUEUE, [{ id: requeued, data: {}, startAfter: later() }]);
  await inCountedTransaction(async (tx, _statements, mostAtOnce) => {
    const writes = gatheredJobWrites(boss, tx);
    await writes.delete(ORDER_TIMER_QUEUE, [requeued]);
    await writes.insert(ORDER_TIMER_QUEUE, [{ id: requeued, data: { again: true }, startAfter: later() }]);
    await writes.insert(ORDER_TIMER_QUEUE, [{ id: dropped, data: {}, startAfter: later() }]);
    await writes.delete(ORDER_TIMER_QUEUE, [dropped]);
    await writes.flush();
    assert.equal(mostAtOnce(), 1, "writes that must keep their order each wait for the one before");
  });
  assert.deepEqual(await queued(ORDER_TIMER_QUEUE, [requeued, dropped]), [requeued]);
  const { rows } = await pool.query<{ data: { again?: boolean } }>("SELECT data FROM pgboss.job WHERE id = $1", [requeued]);
  assert.equal(rows[0]!.data.again, true, "the job queued after the cancel is the one kept");
});

test("one id queued twice in one flush is written once, the first as a second insert would leave it", async () => {
  const id = uuid();
  await inCountedTransaction(async (tx) => {
    const writes = gatheredJobWrites(boss, tx);
    await writes.insert(ORDER_TIMER_QUEUE, [{ id, data: { first: true }, startAfter: later() }]);
    await writes.insert(ORDER_TIMER_QUEUE, [{ id, data: { first: false }, startAfter: later() }]);
    await writes.flush();
  });
  const { rows } = await pool.query<{ data: { first: boolean } }>("SELECT data FROM pgboss.job WHERE id = $1", [id]);
  assert.deepEqual(rows.map((row) => row.data.first), [true]);
});

test("gathered writes of a transaction rolled back leave no job", async () => {
  const id = uuid();
  await assert.rejects(
    inCountedTransaction(async (tx) => {
      const writes = gatheredJobWrites(boss, tx);
      await writes.insert(ORDER_TIMER_QUEUE, [{ id, data: {}, startAfter: later() }]);
      await writes.flush();
      throw new Error("the transaction fails after the flush");
    }),
    /fails after the flush/,
  );
  assert.deepEqual(await queued(ORDER_TIMER_QUEUE, [id]), []);
});
