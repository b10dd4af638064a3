import type { Queryable } from "../db/pool.ts";
import { KYC_LEVELS, KYC_SESSION_PRICE_USD, type KycLevel } from "../domain/kyc.ts";
import { toJsonNumber } from "../domain/money.ts";
import { effectiveLimits, getPartner } from "../partners/partners.ts";
import { mexicoMonth, mexicoMonthRange } from "../domain/periods.ts";
import { kycSessionFromRow, type KycSessionRow } from "./sessions.ts";

export interface KycUsageSession {
  id: string;
  sessionId: string;
  userId: string;
  partnerUserRef: string;
  level: KycLevel;
  status: "PENDING" | "APPROVED" | "REJECTED";
  billed: boolean;
  priceUsd: number;
  isPep: boolean;
  isSanctioned: boolean;
  createdAt: string;
  decidedAt: string | null;
}

export interface KycUsage {
  partnerId: string;
  tier: string;
  /** "YYYY-MM", a calendar month in America/Mexico_City. */
  month: string;
  periodStart: string;
  periodEnd: string;
  includedPerMonth: number;
  /** null: no cap. */
  capPerMonth: number | null;
  /** Sessions the provider created this month, oldest first (failed attempts are not sessions). */
  sessions: KycUsageSession[];
  counts: { total: number; BASIC: number; FULL: number };
  /** Sessions within the included allocation (free). */
  included: number;
  /** Sessions billed beyond it. */
  billed: number;
  billedAmountUsd: number;
  /** Attempts the provider failed to create (neither counted nor billed). */
  failedAttempts: number;
  prices: Record<KycLevel, number>;
}

/**
 * A partner's KYC usage for a month (default: the current Mexico City month): the admin API's
 * `GET /admin/v1/partners/:id/kyc-usage` and the admin command line. Unknown partner: NOT_FOUND.
 */
export async function kycUsage(db: Queryable, partnerId: string, month: string = mexicoMonth(new Date())): Promise<KycUsage> {
  const partner = await getPartner(db, partnerId);
  const limits = effectiveLimits(partner);
  const { from, to } = mexicoMonthRange(month);
  const { rows } = await db.query<KycSessionRow & { partner_user_ref: string }>(
    `SELECT s.*, u.partner_user_ref FROM kyc_sessions s JOIN users u ON u.id = s.user_id
      WHERE s.partner_id = $1 AND s.period_month = $2 AND s.status IN ('PENDING', 'APPROVED', 'REJECTED')
      ORDER BY s.created_at, s.id`,
    [partnerId, month],
  );
  const { rows: totals } = await db.query<{ billed: string; amount: string; failed: string }>(
    `SELECT count(*) FILTER (WHERE billed AND status IN ('PENDING', 'APPROVED', 'REJECTED')) AS billed,
            coalesce(sum(price_usd) FILTER (WHERE status IN ('PENDING', 'APPROVED', 'REJECTED')), 0) AS amount,
            count(*) FILTER (WHERE status = 'FAILED') AS failed
       FROM kyc_sessions WHERE partner_id = $1 AND period_month = $2`,
    [partnerId, month],
  );
  const sessions = rows.map((row): KycUsageSession => {
    const session = kycSessionFromRow(row);
    return {
      id: session.id,
      sessionId: session.providerSessionId!,
      userId: session.userId,
      partnerUserRef: row.partner_user_ref,
      level: session.level,
      status: session.status as KycUsageSession["status"],
      billed: session.billed,
      priceUsd: toJsonNumber(session.priceUsd),
      isPep: session.isPep,
      isSanctioned: session.isSanctioned,
      createdAt: session.createdAt.toISOString(),
      decidedAt: session.decidedAt?.toISOString() ?? null,
    };
  });
  const billed = Number(totals[0]!.billed);
  return {
    partnerId,
    tier: partner.tier,
    month,
    periodStart: from.toISOString(),
    periodEnd: to.toISOString(),
    includedPerMonth: limits.kycIncludedPerMonth,
    capPerMonth: limits.kycCapPerMonth,
    sessions,
    counts: {
      total: sessions.length,
      BASIC: sessions.filter((s) => s.level === "BASIC").length,
      FULL: sessions.filter((s) => s.level === "FULL").length,
    },
    included: sessions.length - billed,
    billed,
    billedAmountUsd: toJsonNumber(totals[0]!.amount),
    failedAttempts: Number(totals[0]!.failed),
    prices: Object.fromEntries(KYC_LEVELS.map((level) => [level, toJsonNumber(KYC_SESSION_PRICE_USD[level])])) as Record<KycLevel, number>,
  };
}
