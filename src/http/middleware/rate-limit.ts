import type { Queryable } from "../../db/pool.ts";

export interface RateLimitWindow {
  limit: number;
  remaining: number;
  /** Unix seconds when the next window starts. */
  resetAt: number;
  exceeded: boolean;
  retryAfterSeconds: number;
}

/** The time requests are counted at; the service's composition chooses it (tests pass a fixed one). */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

const WINDOW_MS = 60_000;
const windowStartOf = (now: number) => Math.floor(now / WINDOW_MS) * WINDOW_MS;

/** How often each instance adds its unflushed counts to the shared windows (docs/security.md, "Credential cache and rate limits"). */
export const FLUSH_INTERVAL_MS = 200;

/**
 * The part of a window counted one request at a time in the database: the last tenth of the allowance,
 * at least 10 requests. Near the limit every instance then sees the others' flushed counts before
 * answering, so small limits (and the headers near any limit) are exact across instances.
 */
export const syncMargin = (limit: number) => Math.max(10, Math.ceil(limit / 10));

/**
 * Adds `deltas` to their shared windows in one statement and returns each window's new total, which
 * includes every instance's flushed counts. Sorted by bucket so concurrent batches lock rows in one
 * order (no deadlock).
 */
async function addToWindows(db: Queryable, deltas: { bucket: string; windowStart: number; delta: number }[]): Promise<Map<string, number>> {
  const sorted = [...deltas].sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : a.windowStart - b.windowStart));
  const { rows } = await db.query<{ bucket: string; window_start: Date; count: number }>(
    `INSERT INTO rate_limit_windows (bucket, window_start, count)
     SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[]) ORDER BY 1, 2
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + excluded.count
     RETURNING bucket, window_start, count`,
    [sorted.map((d) => d.bucket), sorted.map((d) => new Date(d.windowStart)), sorted.map((d) => d.delta)],
  );
  return new Map(rows.map((row) => [windowKey(row.bucket, row.window_start.getTime()), row.count]));
}

async function readCount(db: Queryable, bucket: string, windowStart: number): Promise<number> {
  const { rows } = await db.query<{ count: number }>("SELECT count FROM rate_limit_windows WHERE bucket = $1 AND window_start = $2", [
    bucket,
    new Date(windowStart),
  ]);
  return rows[0]?.count ?? 0;
}

const windowKey = (bucket: string, windowStart: number) => `${windowStart}|${bucket}`;

/**
 * Counts one request in the database at once and answers from the shared total. For limits on failures
 * (admin authentication, market sign-in), which are rare and must hold exactly across instances.
 */
export async function countRequest(db: Queryable, bucket: string, limit: number, now = Date.now()): Promise<RateLimitWindow> {
  const windowStart = windowStartOf(now);
  const totals = await addToWindows(db, [{ bucket, windowStart, delta: 1 }]);
  return windowOf(totals.get(windowKey(bucket, windowStart))!, limit, windowStart, now);
}

/**
 * The current window of a bucket without counting this request: `exceeded` once the limit is used up.
 * For limits on failures, which are counted only when they happen.
 */
export async function readWindow(db: Queryable, bucket: string, limit: number, now = Date.now()): Promise<RateLimitWindow> {
  const windowStart = windowStartOf(now);
  return windowOf((await readCount(db, bucket, windowStart)) + 1, limit, windowStart, now);
}

function windowOf(count: number, limit: number, windowStart: number, now: number): RateLimitWindow {
  const resetAt = (windowStart + WINDOW_MS) / 1000;
  return {
    limit,
    remaining: Math.max(0, limit - count),
    resetAt,
    exceeded: count > limit,
    retryAfterSeconds: Math.max(1, Math.ceil(resetAt - now / 1000)),
  };
}

/** One bucket's window as this instance knows it. */
interface WindowState {
  bucket: string;
  windowStart: number;
  /** The shared total as of this instance's last flush or read (every instance's flushed counts). */
  shared: number;
  /** Whether `shared` has been read at all: the window's first request here reads it (one round trip per window). */
  read: boolean;
  /** Counted here, being added to the shared total by the flush in flight. */
  inflight: number;
  /** Counted here, not yet sent. */
  pending: number;
  /** Requests near the limit waiting for the next flush: their place in `pending` gives their exact count. */
  waiters: { position: number; resolve: (count: number) => void; reject: (error: unknown) => void }[];
  /** At most one flush per window at a time, so `shared` always includes every acknowledged local count. */
  flushing: Promise<void> | undefined;
}

export interface RateLimits {
  /**
   * Counts a request in its bucket's window and decides on it (partner and per-address API windows): at
   * once when this instance can decide alone, else once the count has reached the shared window.
   */
  count(bucket: string, limit: number): RateLimitWindow | Promise<RateLimitWindow>;
  /** What a bucket's current window holds, every instance's flushed counts and this one's included, without counting. */
  usage(bucket: string, limit: number): Promise<{ used: number; limit: number; resetAt: number }>;
  /** Sends every unflushed count now (also done every FLUSH_INTERVAL_MS). */
  flush(): Promise<void>;
  /** Stops the periodic flush after a last one. */
  stop(): Promise<void>;
}

export interface RateLimitOptions {
  db: Queryable;
  clock?: Clock;
  flushIntervalMs?: number;
  onFlushError?: (error: unknown) => void;
}

/**
 * Fixed one-minute windows aligned to the UTC minute (decisions section 3), counted in memory and added
 * to the shared `rate_limit_windows` in batches, so a request costs no database round trip until its
 * window nears its limit. A decision uses the shared total last read plus this instance's unflushed
 * counts; the first request of a window in this instance, and each of the last `syncMargin` requests of
 * a window, is flushed and read before the answer. What N instances can admit together is stated in
 * docs/security.md ("Credential cache and rate limits").
 */
export function createRateLimits(options: RateLimitOptions): RateLimits {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const windows = new Map<string, WindowState>();
  /** Each bucket's latest window, found by the bucket alone: most requests count in the window of the one before. */
  const latest = new Map<string, WindowState>();

  function stateOf(bucket: string, windowStart: number): WindowState {
    const last = latest.get(bucket);
    if (last?.windowStart === windowStart) return last;
    const key = windowKey(bucket, windowStart);
    let state = windows.get(key);
    if (!state) {
      state = { bucket, windowStart, shared: 0, read: false, inflight: 0, pending: 0, waiters: [], flushing: undefined };
      windows.set(key, state);
    }
    if (last === undefined || last.windowStart < windowStart) latest.set(bucket, state);
    return state;
  }

  /** Sends the pending counts of `states` (none of them flushing) in one statement. */
  async function send(states: WindowState[]): Promise<void> {
    const batches = states.map((state) => {
      const batch = { state, delta: state.pending, waiters: state.waiters };
      state.inflight = state.pending;
      state.pending = 0;
      state.waiters = [];
      return batch;
    });
    try {
      const totals = await addToWindows(
        db,
        batches.map(({ state, delta }) => ({ bucket: state.bucket, windowStart: state.windowStart, delta })),
      );
      for (const { state, delta, waiters } of batches) {
        state.shared = totals.get(windowKey(state.bucket, state.windowStart))!;
        state.read = true;
        state.inflight = 0;
        for (const waiter of waiters) waiter.resolve(state.shared - delta + waiter.position);
      }
    } catch (error) {
      // Nothing was added: the counts stay to be sent again; the requests waiting on them fail like any request whose database is gone.
      for (const { state, delta, waiters } of batches) {
        state.inflight = 0;
        state.pending += delta;
        for (const waiter of waiters) waiter.reject(error);
      }
      throw error;
    }
  }

  /**
   * Windows whose requests wait for their count to reach the database, sent together once the event
   * loop has read what else arrived: a flood from many addresses (each address's first request of a
   * window waits for its shared total) costs a statement per loop turn rather than one per address.
   */
  const awaitingFlush = new Set<WindowState>();
  let flushScheduled = false;

  function flushSoon(state: WindowState): void {
    awaitingFlush.add(state);
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(() => {
      flushScheduled = false;
      const idle = [...awaitingFlush].filter((waiting) => !waiting.flushing && waiting.pending > 0);
      for (const waiting of awaitingFlush) if (waiting.flushing) void flushOne(waiting).catch(() => undefined);
      awaitingFlush.clear();
      if (idle.length > 0) void track(idle, send(idle)).catch(() => undefined);
    });
  }

  /** Flushes one window now, or right after the flush of it in flight. */
  function flushOne(state: WindowState): Promise<void> {
    if (state.flushing) return state.flushing.then(() => (state.pending > 0 ? flushOne(state) : undefined));
    return track([state], send([state]));
  }

  /** Marks `states` as flushing until `run` settles; `flushing` itself never rejects (the caller of `run` hears the error). */
  function track(states: WindowState[], run: Promise<void>): Promise<void> {
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    for (const state of states) {
      state.flushing = settled.then(() => {
        state.flushing = undefined;
      });
    }
    return run;
  }

  async function flushAll(): Promise<void> {
    const due = [...windows.values()].filter((state) => state.pending > 0 && !state.flushing);
    if (due.length > 0) await track(due, send(due));
    // A window over is kept only while counts of it are still on their way.
    const current = windowStartOf(clock.now());
    for (const [key, state] of windows) {
      if (state.windowStart < current && state.pending === 0 && !state.flushing) {
        windows.delete(key);
        if (latest.get(state.bucket) === state) latest.delete(state.bucket);
      }
    }
  }

  const timer = setInterval(() => {
    flushAll().catch((error: unknown) => options.onFlushError?.(error));
  }, options.flushIntervalMs ?? FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    count(bucket, limit) {
      const now = clock.now();
      const windowStart = windowStartOf(now);
      const state = stateOf(bucket, windowStart);
      const known = state.shared + state.inflight + state.pending;
      state.pending += 1;
      // Already past the limit (windows only grow), or far enough from it by a total read before: decided here.
      if (state.read && (known >= limit || limit - (known + 1) >= syncMargin(limit))) return windowOf(known + 1, limit, windowStart, now);
      const position = state.pending;
      const counted = new Promise<number>((resolve, reject) => state.waiters.push({ position, resolve, reject }));
      flushSoon(state);
      return counted.then((count) => windowOf(count, limit, windowStart, now));
    },

    async usage(bucket, limit) {
      const now = clock.now();
      const windowStart = windowStartOf(now);
      const state = stateOf(bucket, windowStart);
      if (state.pending > 0 || state.flushing) await flushOne(state);
      else {
        state.shared = Math.max(state.shared, await readCount(db, bucket, windowStart));
        state.read = true;
      }
      return { used: state.shared + state.pending + state.inflight, limit, resetAt: (windowStart + WINDOW_MS) / 1000 };
    },

    flush: flushAll,

    async stop() {
      clearInterval(timer);
      await Promise.all([...windows.values()].map((state) => state.flushing));
      await flushAll();
    },
  };
}

/** Old windows are useless after their minute; pruned by a periodic job. */
export async function pruneRateLimitWindows(db: Queryable, now = Date.now()): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM rate_limit_windows WHERE window_start < $1", [new Date(now - 120_000)]);
  return rowCount ?? 0;
}
