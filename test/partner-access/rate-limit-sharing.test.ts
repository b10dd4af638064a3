import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { migrate } from "../../src/db/migrate.ts";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { createRateLimits, syncMargin, type RateLimits } from "../../src/http/middleware/rate-limit.ts";
import { createTestDatabase } from "../support/database.ts";

// Rate-limit windows counted in memory per instance and flushed in batches (issue 15, docs/security.md
// "Credential cache and rate limits"). Each RateLimits here is one service instance; they share one database. The periodic
// flush is set an hour apart so the tests choose when a flush interval ends (`flush()`).
const MINUTE = 60_000;
const windowStart = Math.floor(Date.now() / MINUTE) * MINUTE + 120 * MINUTE;
let instant = windowStart + 30_000;
const clock = { now: () => instant };

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
const instances: RateLimits[] = [];
let bucketNumber = 0;
const newBucket = () => `test:${process.pid}:${(bucketNumber += 1)}`;

function instance(): RateLimits {
  const limits = createRateLimits({ db: pool, clock, flushIntervalMs: 3_600_000 });
  instances.push(limits);
  return limits;
}

before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  pool = createPool(database.url, 10);
});
after(async () => {
  await Promise.all(instances.map((limits) => limits.stop()));
  await pool.end();
  await database.drop();
});

async function sharedCount(bucket: string): Promise<number> {
  const { rows } = await pool.query<{ count: number }>("SELECT count FROM rate_limit_windows WHERE bucket = $1", [bucket]);
  return rows[0]?.count ?? 0;
}

test("far from the limit a request is counted in memory: after the window's first, nothing reaches the database until a flush", async () => {
  const limits = instance();
  const bucket = newBucket();
  for (let i = 0; i < 50; i += 1) assert.equal((await limits.count(bucket, 1000)).exceeded, false);
  assert.equal(await sharedCount(bucket), 1);
  await limits.flush();
  assert.equal(await sharedCount(bucket), 50);
  assert.equal((await limits.count(bucket, 1000)).remaining, 1000 - 51);
});

test("the first requests of many windows that arrive together reach the database in one statement", async () => {
  let statements = 0;
  const counting = { query: ((...args: Parameters<Pool["query"]>) => ((statements += 1), pool.query(...args))) as Pool["query"] };
  const limits = createRateLimits({ db: counting, clock, flushIntervalMs: 3_600_000 });
  instances.push(limits);
  const buckets = Array.from({ length: 200 }, newBucket);
  const windows = await Promise.all(buckets.map((bucket) => limits.count(bucket, 60)));
  assert.equal(statements, 1);
  assert.ok(windows.every((window) => !window.exceeded && window.remaining === 59));
  assert.deepEqual(await Promise.all(buckets.map(sharedCount)), buckets.map(() => 1));
});

test("while the database is down the first requests of many windows fail together, and their counts reach it once it is back", async () => {
  let down = true;
  const failing = { query: ((...args: Parameters<Pool["query"]>) => (down ? Promise.reject(new Error("database down")) : pool.query(...args))) as Pool["query"] };
  const limits = createRateLimits({ db: failing, clock, flushIntervalMs: 3_600_000 });
  instances.push(limits);
  const buckets = Array.from({ length: 20 }, newBucket);
  const answers = await Promise.allSettled(buckets.map((bucket) => limits.count(bucket, 60)));
  assert.ok(answers.every((answer) => answer.status === "rejected"));
  down = false;
  await limits.flush();
  assert.deepEqual(await Promise.all(buckets.map(sharedCount)), buckets.map(() => 1));
});

test("one instance never admits more than the limit, however many requests arrive at once", async () => {
  const limits = instance();
  for (const limit of [7, 100, 1000]) {
    const bucket = newBucket();
    const windows = await Promise.all(Array.from({ length: limit + 300 }, () => limits.count(bucket, limit)));
    assert.equal(windows.filter((window) => !window.exceeded).length, limit, `limit ${limit}`);
    // Each admitted request saw its own place in the window.
    const remaining = windows.filter((window) => !window.exceeded).map((window) => window.remaining);
    assert.deepEqual(new Set(remaining).size, limit, `limit ${limit}: remaining counts down one by one`);
  }
});

test("two instances together admit at most the limit plus what the other counted in two flush intervals, and never refuse under the limit", async () => {
  const limit = 100;
  const perInterval = 15;
  for (const order of ["one then the other", "interleaved"]) {
    const [a, b] = [instance(), instance()];
    const bucket = newBucket();
    let admitted = 0;
    let refusedBeforeLimit = 0;
    let counted = 0;
    for (let interval = 0; interval < 20; interval += 1) {
      const requests =
        order === "interleaved"
          ? Array.from({ length: 2 * perInterval }, (_, i) => (i % 2 === 0 ? a : b).count(bucket, limit))
          : [...Array.from({ length: perInterval }, () => a.count(bucket, limit)), ...Array.from({ length: perInterval }, () => b.count(bucket, limit))];
      for (const window of await Promise.all(requests)) {
        counted += 1;
        if (!window.exceeded) admitted += 1;
        else if (counted <= limit) refusedBeforeLimit += 1;
      }
      // The end of a flush interval for both instances.
      await Promise.all([a.flush(), b.flush()]);
    }
    assert.equal(await sharedCount(bucket), counted, `${order}: every request reached the shared window`);
    assert.equal(refusedBeforeLimit, 0, `${order}: no request refused while the window had room`);
    assert.ok(admitted >= limit, `${order}: ${admitted} admitted`);
    assert.ok(admitted <= limit + 2 * perInterval, `${order}: ${admitted} admitted, bound ${limit + 2 * perInterval}`);
  }
});

test("in the last tenth of a window each request is counted in the database before it is answered, so instances agree exactly", async () => {
  const [a, b] = [instance(), instance()];
  const bucket = newBucket();
  const limit = 200;
  assert.equal(syncMargin(limit), 20);
  // 181 counted on one instance and flushed; the other has read the window.
  for (let i = 0; i < 181; i += 1) await a.count(bucket, limit);
  await a.flush();
  assert.equal((await b.usage(bucket, limit)).used, 181);
  const windows = [];
  for (let i = 0; i < 22; i += 1) windows.push(await (i % 2 === 0 ? b : a).count(bucket, limit));
  assert.deepEqual(
    windows.map((window) => window.remaining),
    [18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0],
  );
  assert.equal(windows.filter((window) => !window.exceeded).length, 19);
});

test("an instance's first request in a window reads the shared total: a partner already at its limit elsewhere is refused", async () => {
  const [a, b] = [instance(), instance()];
  const bucket = newBucket();
  for (let i = 0; i < 50; i += 1) await a.count(bucket, 50);
  await a.flush();
  assert.equal((await b.count(bucket, 50)).exceeded, true);
});

test("windows reset at the UTC minute: the next minute has the full allowance", async () => {
  const limits = instance();
  const bucket = newBucket();
  instant = windowStart + 59_000;
  for (let i = 0; i < 3; i += 1) await limits.count(bucket, 3);
  assert.equal((await limits.count(bucket, 3)).exceeded, true);
  instant = windowStart + MINUTE;
  const next = await limits.count(bucket, 3);
  assert.deepEqual([next.exceeded, next.remaining, next.resetAt], [false, 2, (windowStart + 2 * MINUTE) / 1000]);
  instant = windowStart + 30_000;
});

test("usage reads what the instances counted, flushed or not", async () => {
  const [a, b] = [instance(), instance()];
  const bucket = newBucket();
  for (let i = 0; i < 40; i += 1) await a.count(bucket, 1000);
  for (let i = 0; i < 25; i += 1) await b.count(bucket, 1000);
  await b.flush();
  assert.equal((await a.usage(bucket, 1000)).used, 65);
  assert.equal((await b.usage(bucket, 1000)).used, 65);
});

test("each minute is counted in its own window, also when the clock steps back into the minute before", async () => {
  const limits = instance();
  const bucket = newBucket();
  const started = instant;
  try {
    instant = windowStart + 30_000;
    for (let i = 0; i < 3; i += 1) await limits.count(bucket, 1000);
    instant += MINUTE;
    assert.equal((await limits.count(bucket, 1000)).remaining, 999);
    instant -= MINUTE;
    assert.equal((await limits.count(bucket, 1000)).remaining, 996);
    instant += MINUTE;
    assert.equal((await limits.count(bucket, 1000)).remaining, 998);
    await limits.flush();
    const { rows } = await pool.query<{ window_start: Date; count: number }>("SELECT window_start, count FROM rate_limit_windows WHERE bucket = $1 ORDER BY window_start", [bucket]);
    assert.deepEqual(
      rows.map((row) => [row.window_start.getTime(), row.count]),
      [
        [windowStart, 4],
        [windowStart + MINUTE, 2],
      ],
    );
  } finally {
    instant = started;
  }
});
