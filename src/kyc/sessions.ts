// KYC sessions: reservation against the monthly cap, activation with billing, failure, look-ups.
// Billing and cap rules are in docs/kyc.md.
import type { Pool, Queryable } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { KycLimitReachedError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { KYC_SESSION_PRICE_USD, type KycLevel } from "../domain/kyc.ts";
import { markKycPending } from "../users/users.ts";
import { mexicoMonth } from "../domain/periods.ts";

export type KycSessionStatus = "CREATING" | "FAILED" | "PENDING" | "APPROVED" | "REJECTED";

export interface KycSessionRecord {
  id: string;
  partnerId: string;
  userId: string;
  level: KycLevel;
  status: KycSessionStatus;
  periodMonth: string;
  providerSessionId: string | null;
  sessionUrl: string | null;
  returnUrl: string;
  billed: boolean;
  /** Exact decimal string, "0.00" when within the included allocation. */
  priceUsd: string;
  failure: string | null;
  isPep: boolean;
  isSanctioned: boolean;
  decisionReason: string | null;
  decidedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface KycSessionRow {
  id: string;
  partner_id: string;
  user_id: string;
  level: KycLevel;
  status: KycSessionStatus;
  period_month: string;
  provider_session_id: string | null;
  session_url: string | null;
  return_url: string;
  billed: boolean;
  price_usd: string;
  failure: string | null;
  is_pep: boolean;
  is_sanctioned: boolean;
  decision_reason: string | null;
  decided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function kycSessionFromRow(row: KycSessionRow): KycSessionRecord {
  return {
    id: row.id,
    partnerId: row.partner_id,
    userId: row.user_id,
    level: row.level,
    status: row.status,
    periodMonth: row.period_month,
    providerSessionId: row.provider_session_id,
    sessionUrl: row.session_url,
    returnUrl: row.return_url,
    billed: row.billed,
    priceUsd: row.price_usd,
    failure: row.failure,
    isPep: row.is_pep,
    isSanctioned: row.is_sanctioned,
    decisionReason: row.decision_reason,
    decidedAt: row.decided_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * A reservation whose provider call never finished (the process died in between) stops holding a place
 * under the cap after this long; provider calls time out far sooner.
 */
export const STALE_RESERVATION_SECONDS = 600;

/** Sessions that count against the month: created at the provider, or being created right now. */
const COUNTED = `(status IN ('PENDING', 'APPROVED', 'REJECTED')
   OR (status = 'CREATING' AND created_at > now() - make_interval(secs => ${STALE_RESERVATION_SECONDS})))`;

/**
 * The partner's KYC sessions of a Mexico City month ("YYYY-MM") as the cap counts them: the one count
 * behind both the cap (reserveKycSession) and the dashboard's `kyc.sessionsThisMonth`.
 */
export async function kycSessionsCountedAgainstCap(db: Queryable, partnerId: string, month: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM kyc_sessions WHERE partner_id = $1 AND period_month = $2 AND ${COUNTED}`, [partnerId, month]);
  return Number(rows[0]!.n);
}

/** Serializes KYC session counting for one partner (reservations and activations), until the transaction ends. */
async function lockPartnerKycUsage(tx: Queryable, partnerId: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('kyc_sessions:' || $1))", [partnerId]);
}

/**
 * Reserves a place for a new session under the partner's monthly cap (null: no cap), or throws
 * KYC_LIMIT_REACHED. Counting and inserting happen under a per-partner lock, so concurrent requests
 * cannot pass the cap together.
 */
export async function reserveKycSession(
  pool: Pool,
  input: { partnerId: string; userId: string; level: KycLevel; returnUrl: string; capPerMonth: number | null; now?: Date },
): Promise<KycSessionRecord> {
  const now = input.now ?? new Date();
  const month = mexicoMonth(now);
  return withTransaction(pool, async (tx) => {
    await lockPartnerKycUsage(tx, input.partnerId);
    if (input.capPerMonth !== null) {
      if ((await kycSessionsCountedAgainstCap(tx, input.partnerId, month)) >= input.capPerMonth) {
        throw new KycLimitReachedError(`The tier allows ${input.capPerMonth} KYC sessions per month; ${month} has used them all`);
      }
    }
    const { rows } = await tx.query<KycSessionRow>(
      `INSERT INTO kyc_sessions (id, partner_id, user_id, level, status, period_month, return_url, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'CREATING', $5, $6, $7, $7) RETURNING *`,
      [newId("kyc"), input.partnerId, input.userId, input.level, month, input.returnUrl, now],
    );
    return kycSessionFromRow(rows[0]!);
  });
}

/**
 * The provider created the session: the reservation becomes PENDING, is billed when the partner's month
 * already holds `includedPerMonth` created sessions (price of its level), and the user becomes PENDING.
 * Billing counts only sessions the provider created, so a failed attempt never uses up the allocation.
 */
export async function activateKycSession(
  pool: Pool,
  reservation: KycSessionRecord,
  created: { providerSessionId: string; sessionUrl: string; includedPerMonth: number },
): Promise<KycSessionRecord> {
  return withTransaction(pool, async (tx) => {
    await lockPartnerKycUsage(tx, reservation.partnerId);
    const { rows: counted } = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM kyc_sessions
        WHERE partner_id = $1 AND period_month = $2 AND status IN ('PENDING', 'APPROVED', 'REJECTED')`,
      [reservation.partnerId, reservation.periodMonth],
    );
    const billed = Number(counted[0]!.n) >= created.includedPerMonth;
    const { rows } = await tx.query<KycSessionRow>(
      `UPDATE kyc_sessions SET status = 'PENDING', provider_session_id = $2, session_url = $3, billed = $4, price_usd = $5, updated_at = now()
        WHERE id = $1 AND status = 'CREATING' RETURNING *`,
      [reservation.id, created.providerSessionId, created.sessionUrl, billed, billed ? KYC_SESSION_PRICE_USD[reservation.level] : "0"],
    );
    if (!rows[0]) throw new Error(`KYC session ${reservation.id} is no longer being created`);
    await markKycPending(tx, reservation.userId);
    return kycSessionFromRow(rows[0]);
  });
}

/** The provider did not create the session: the reservation is released (never counted, never billed). */
export async function failKycSession(db: Queryable, reservation: KycSessionRecord, failure: string): Promise<void> {
  await db.query("UPDATE kyc_sessions SET status = 'FAILED', failure = $2, updated_at = now() WHERE id = $1 AND status = 'CREATING'", [
    reservation.id,
    failure,
  ]);
}

export async function findKycSessionByProviderId(db: Queryable, providerSessionId: string, forUpdate = false): Promise<KycSessionRecord | undefined> {
  const { rows } = await db.query<KycSessionRow>(
    `SELECT * FROM kyc_sessions WHERE provider_session_id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [providerSessionId],
  );
  return rows[0] ? kycSessionFromRow(rows[0]) : undefined;
}
