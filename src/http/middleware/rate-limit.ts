import type { Queryable } from "../../db/pool.ts";

export interface RateLimitWindow {
  limit: number;
  remaining: number;
  /** Unix seconds when the next window starts. */
  resetAt: number;
  exceeded: boolean;
  retryAfterSeconds: number;
}

/**
 * The clock requests are counted on. Production never changes it; tests move it to cross a window
 * boundary without waiting a minute.
 */
export const rateLimitClock = { now: (): number => Date.now() };

/**
 * Fixed one-minute windows aligned to the UTC minute, counted in PostgreSQL so every instance of the
 * service shares them (decisions section 3). One upsert per request.
 */
export async function countRequest(db: Queryable, bucket: string, limit: number, now = Date.now()): Promise<RateLimitWindow> {
  const windowStart = Math.floor(now / 60_000) * 60_000;
  const { rows } = await db.query<{ count: number }>(
    `INSERT INTO rate_limit_windows (bucket, window_start, count) VALUES ($1, $2, 1)
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
     RETURNING count`,
    [bucket, new Date(windowStart)],
  );
  return windowOf(rows[0]!.count, limit, windowStart, now);
}

/**
 * The current window of a bucket without counting this request: `exceeded` once the limit is used up.
 * For limits on failures, which are counted only when they happen.
 */
export async function readWindow(db: Queryable, bucket: string, limit: number, now = Date.now()): Promise<RateLimitWindow> {
  const windowStart = Math.floor(now / 60_000) * 60_000;
  const { rows } = await db.query<{ count: number }>("SELECT count FROM rate_limit_windows WHERE bucket = $1 AND window_start = $2", [
    bucket,
    new Date(windowStart),
  ]);
  return windowOf((rows[0]?.count ?? 0) + 1, limit, windowStart, now);
}

/** What a bucket's current window has counted so far, without counting (the dashboard's usage figures). */
export async function windowUsage(db: Queryable, bucket: string, limit: number, now = Date.now()): Promise<{ used: number; limit: number; resetAt: number }> {
  const windowStart = Math.floor(now / 60_000) * 60_000;
  const { rows } = await db.query<{ count: number }>("SELECT count FROM rate_limit_windows WHERE bucket = $1 AND window_start = $2", [
    bucket,
    new Date(windowStart),
  ]);
  return { used: rows[0]?.count ?? 0, limit, resetAt: (windowStart + 60_000) / 1000 };
}

function windowOf(count: number, limit: number, windowStart: number, now: number): RateLimitWindow {
  const resetAt = (windowStart + 60_000) / 1000;
  return {
    limit,
    remaining: Math.max(0, limit - count),
    resetAt,
    exceeded: count > limit,
    retryAfterSeconds: Math.max(1, Math.ceil(resetAt - now / 1000)),
  };
}

/** Old windows are useless after their minute; pruned by a periodic job. */
export async function pruneRateLimitWindows(db: Queryable, now = Date.now()): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM rate_limit_windows WHERE window_start < $1", [new Date(now - 120_000)]);
  return rowCount ?? 0;
}
