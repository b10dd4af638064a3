import { withTransaction, type Pool, type Queryable } from "../db/pool.ts";
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

function windowStart(now: number): number {
  return Math.floor(now / (FAILURE_WINDOW_SECONDS * 1000)) * FAILURE_WINDOW_SECONDS * 1000;
}

/** An attempt counted in advance against its buckets, in the window it was counted in. */
export interface ClaimedAttempt {
  buckets: string[];
  windowStart: Date;
}

/**
 * Fixed 15-minute windows (aligned to the quarter hour, UTC), per bucket (`signin-email:…`,
 * `signin-ip:…`, `invite-ip:…`). Each attempt is counted as a failure before the password is checked,
 * so that parallel guesses cannot all pass a check made before any of them was counted: the upsert
 * holds each bucket's row until the count commits, and an attempt that would take any bucket past
 * MAX_FAILURES is refused with 429 and `Retry-After` and not counted. A success is then taken back with
 * `forgiveAttempt` (successes are not failures), which does not reset the earlier failures.
 */
export async function claimAttempt(pool: Pool, buckets: string[], now: number): Promise<ClaimedAttempt> {
  const start = windowStart(now);
  const windowStartDate = new Date(start);
  await withTransaction(pool, async (client) => {
    // Sorted, so that two attempts sharing buckets lock their rows in the same order.
    const { rows } = await client.query<{ count: number }>(
      `INSERT INTO dashboard_auth_failures (bucket, window_start, count) SELECT bucket, $2, 1 FROM unnest($1::text[]) AS bucket ORDER BY bucket
       ON CONFLICT (bucket, window_start) DO UPDATE SET count = dashboard_auth_failures.count + 1
       RETURNING count`,
      [[...buckets].sort(), windowStartDate],
    );
    if (Math.max(...rows.map((row) => row.count)) > MAX_FAILURES) {
      const retryAfter = Math.max(1, Math.ceil((start + FAILURE_WINDOW_SECONDS * 1000 - now) / 1000));
      const error = new RateLimitedError(retryAfter);
      error.message = `Too many failed attempts; retry after ${retryAfter} s`;
      throw error; // rolls the counts back: a refused attempt is not a failure
    }
    await client.query("DELETE FROM dashboard_auth_failures WHERE window_start < $1", [new Date(start - FAILURE_WINDOW_SECONDS * 1000)]);
  });
  return { buckets, windowStart: windowStartDate };
}

/** Takes back an attempt that turned out not to be a failure. */
export async function forgiveAttempt(db: Queryable, attempt: ClaimedAttempt): Promise<void> {
  await db.query("UPDATE dashboard_auth_failures SET count = count - 1 WHERE bucket = ANY($1) AND window_start = $2 AND count > 0", [
    attempt.buckets,
    attempt.windowStart,
  ]);
}
