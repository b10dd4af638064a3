import type { Queryable } from "../db/pool.ts";
import { RateLimitedError } from "../domain/errors.ts";
import { generateToken, hashToken } from "./credentials.ts";
import type { Member, Role } from "./members.ts";

// Dashboard sessions (decisions section 18): a random token in an HttpOnly cookie, its SHA-256 in the
// database, 12 hours. Signing out deletes the row, so the old cookie stops working at once.

export const SESSION_HOURS = 12;

export async function createSession(db: Queryable, memberId: string): Promise<{ token: string; expiresAt: Date }> {
  const token = generateToken();
  const expiresAt = new Date(Date.now() + SESSION_HOURS * 3600_000);
  await db.query("INSERT INTO dashboard_sessions (token_hash, member_id, expires_at) VALUES ($1, $2, $3)", [hashToken(token), memberId, expiresAt]);
  // Expired sessions of this member are useless: pruned as new ones start.
  await db.query("DELETE FROM dashboard_sessions WHERE member_id = $1 AND expires_at < now()", [memberId]);
  return { token, expiresAt };
}

/** The member of a live session (an accepted member), or undefined. */
export async function findSession(db: Queryable, token: string): Promise<Member | undefined> {
  const { rows } = await db.query<{ id: string; partner_id: string; email: string; role: Role; created_at: Date; accepted_at: Date | null }>(
    `SELECT m.id, m.partner_id, m.email, m.role, m.created_at, m.accepted_at
       FROM dashboard_sessions s JOIN dashboard_members m ON m.id = s.member_id
      WHERE s.token_hash = $1 AND s.expires_at > now() AND m.password_hash IS NOT NULL`,
    [hashToken(token)],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { id: row.id, partnerId: row.partner_id, email: row.email, role: row.role, status: "ACTIVE", createdAt: row.created_at, acceptedAt: row.accepted_at };
}

export async function deleteSession(db: Queryable, token: string): Promise<void> {
  await db.query("DELETE FROM dashboard_sessions WHERE token_hash = $1", [hashToken(token)]);
}

// ---------------------------------------------------------------- throttling

/** Failures allowed per email and per address in a window; the next attempt gets 429. */
export const MAX_FAILURES = 5;
export const FAILURE_WINDOW_SECONDS = 15 * 60;

/** The clock failures are counted on; tests move it to cross a window. */
export const throttleClock = { now: (): number => Date.now() };

function windowStart(now: number): number {
  return Math.floor(now / (FAILURE_WINDOW_SECONDS * 1000)) * FAILURE_WINDOW_SECONDS * 1000;
}

/**
 * Fixed 15-minute windows (aligned to the quarter hour, UTC), per bucket (`signin-email:…`,
 * `signin-ip:…`, `invite-ip:…`). Refuses with 429 and `Retry-After` when any bucket already holds
 * MAX_FAILURES failures in the current window; a success does not reset the count.
 */
export async function assertNotThrottled(db: Queryable, buckets: string[]): Promise<void> {
  const now = throttleClock.now();
  const start = windowStart(now);
  const { rows } = await db.query<{ n: number }>(
    "SELECT coalesce(max(count), 0)::int AS n FROM dashboard_auth_failures WHERE bucket = ANY($1) AND window_start = $2",
    [buckets, new Date(start)],
  );
  if (rows[0]!.n >= MAX_FAILURES) {
    const retryAfter = Math.max(1, Math.ceil((start + FAILURE_WINDOW_SECONDS * 1000 - now) / 1000));
    const error = new RateLimitedError(retryAfter);
    error.message = `Too many failed attempts; retry after ${retryAfter} s`;
    throw error;
  }
}

export async function countFailure(db: Queryable, buckets: string[]): Promise<void> {
  const start = new Date(windowStart(throttleClock.now()));
  await db.query(
    `INSERT INTO dashboard_auth_failures (bucket, window_start, count) SELECT unnest($1::text[]), $2, 1
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = dashboard_auth_failures.count + 1`,
    [buckets, start],
  );
  await db.query("DELETE FROM dashboard_auth_failures WHERE window_start < $1", [new Date(start.getTime() - FAILURE_WINDOW_SECONDS * 1000)]);
}
