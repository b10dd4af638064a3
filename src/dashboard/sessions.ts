import type { Queryable } from "../db/pool.ts";
import type { FailureLimit } from "../http/auth-failures.ts";
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

/**
 * Failed sign-ins and invitation acceptances (decisions section 18) in fixed 15-minute windows aligned
 * to the quarter hour (UTC), per bucket (`signin-email:…`, `signin-ip:…`, `invite-ip:…`,
 * `invite-token:…`), as of `now`. Only failures are counted (`judgeAttempt` counts an attempt once it is
 * known to be wrong); a success neither counts nor resets the count.
 */
export function signInFailures(now: number): FailureLimit {
  const windowMs = FAILURE_WINDOW_SECONDS * 1000;
  const start = Math.floor(now / windowMs) * windowMs;
  return {
    async exhausted(db, buckets) {
      const { rows } = await db.query<{ count: number | null }>(
        "SELECT max(count) AS count FROM dashboard_auth_failures WHERE bucket = ANY($1) AND window_start = $2",
        [buckets, new Date(start)],
      );
      return (rows[0]?.count ?? 0) >= MAX_FAILURES ? Math.max(1, Math.ceil((start + windowMs - now) / 1000)) : undefined;
    },
    async count(db, buckets) {
      await db.query(
        `INSERT INTO dashboard_auth_failures (bucket, window_start, count) SELECT bucket, $2, 1 FROM unnest($1::text[]) AS bucket
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = dashboard_auth_failures.count + 1`,
        [buckets, new Date(start)],
      );
    },
    refusal(retryAfter) {
      const error = new RateLimitedError(retryAfter);
      error.message = `Too many failed attempts; retry after ${retryAfter} s`;
      return error;
    },
  };
}

/** Sessions past their 12 hours, and failure windows over (a periodic maintenance task, on the database's clock). */
export async function pruneSessionsAndFailures(db: Queryable): Promise<number> {
  const sessions = await db.query("DELETE FROM dashboard_sessions WHERE expires_at < now()");
  const failures = await db.query("DELETE FROM dashboard_auth_failures WHERE window_start < now() - make_interval(secs => $1)", [FAILURE_WINDOW_SECONDS]);
  return (sessions.rowCount ?? 0) + (failures.rowCount ?? 0);
}
