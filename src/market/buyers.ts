import { getAddress } from "viem";
import type { Queryable } from "../db/pool.ts";
import { FULL_THRESHOLD_MXN, type KycLevel, type KycTierValue } from "../domain/kyc.ts";
import { money, toJsonNumber } from "../domain/money.ts";
import { mexicoPeriodStart } from "../domain/periods.ts";
import { sandboxAccounts } from "../stack/local-node.ts";
import { NotFoundError } from "../domain/errors.ts";
import { syntheticIdentity } from "../domain/payer-identity.ts";
import type { KycStatus } from "../users/users.ts";

// Market buyers (decisions 17): a wallet that has signed in. Their standing (open locks, expired locks,
// suspension, monthly volume) is read from the orders they locked, so it is always what the chain did.

export const SUSPENSION_DAYS = 7;
export const EXPIRED_LOCKS_WINDOW_DAYS = 30;
const DAY_MS = 86_400_000;

/** Order statuses that hold a lock (decisions 17: an open lock). */
export const OPEN_LOCK_STATUSES = ["LOCKED", "DISPUTED", "PENDING_RELEASE"] as const;

export interface BuyerRow {
  wallet: string;
  kyc_status: KycStatus;
  kyc_tier: KycTierValue;
  kyc_completed_at: Date | null;
  suspended_until: Date | null;
  reinstated_at: Date | null;
  /** A KYC decision with a sanctions match (decisions 19). */
  is_sanctioned: boolean;
  is_pep: boolean;
  /** The identity the KYC provider verified (decisions 8): personal data, never in a view partners or other buyers see. */
  verified_name: string | null;
  verified_curp: string | null;
  verified_rfc: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface BuyerPolicy {
  maxOpenLocks: number;
  maxExpiredLocks: number;
  /** Sandbox wallets are exempt from both limits and KYC-approved (decisions 13); only when SANDBOX is on. */
  sandbox: boolean;
}

export function normaliseWallet(wallet: string): string {
  return wallet.toLowerCase();
}

/** One of the sandbox wallets (devAccounts 4 to 9), in sandbox only. */
export function isSandboxWallet(policy: Pick<BuyerPolicy, "sandbox">, wallet: string): boolean {
  return policy.sandbox && sandboxAccounts.some((account) => account.address.toLowerCase() === wallet.toLowerCase());
}

/**
 * The buyer of a wallet, created on first use as a new user is (NOT_REQUIRED / NONE); a sandbox wallet's
 * buyer is KYC-approved (FULL) in sandbox, with a made-up verified identity so its payments can be checked.
 */
export async function ensureBuyer(db: Queryable, policy: Pick<BuyerPolicy, "sandbox">, wallet: string): Promise<BuyerRow> {
  const address = normaliseWallet(wallet);
  const sandbox = isSandboxWallet(policy, address);
  const identity = sandbox ? syntheticIdentity(address) : null;
  const { rows } = await db.query<BuyerRow>(
    `INSERT INTO buyers (wallet, kyc_status, kyc_tier, kyc_completed_at, verified_name, verified_curp, verified_rfc) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (wallet) DO UPDATE SET verified_name = coalesce(buyers.verified_name, EXCLUDED.verified_name),
       verified_curp = coalesce(buyers.verified_curp, EXCLUDED.verified_curp), verified_rfc = coalesce(buyers.verified_rfc, EXCLUDED.verified_rfc)
     RETURNING *`,
    [address, sandbox ? "APPROVED" : "NOT_REQUIRED", sandbox ? "FULL" : "NONE", sandbox ? new Date() : null, identity?.name ?? null, identity?.curp ?? null, identity?.rfc ?? null],
  );
  return rows[0]!;
}

export async function findBuyer(db: Queryable, wallet: string): Promise<BuyerRow | undefined> {
  const { rows } = await db.query<BuyerRow>("SELECT * FROM buyers WHERE wallet = $1", [normaliseWallet(wallet)]);
  return rows[0];
}

export interface BuyerStanding {
  status: "ACTIVE" | "SUSPENDED";
  suspendedUntil: Date | null;
  openLocks: number;
  /** The totalMxn of the open locks: pesos the buyer has yet to pay, counted in its month for KYC. */
  openLocksMxn: string;
  completedTrades: number;
  expiredLocks30d: number;
  monthlyVolumeMxn: string;
}

/**
 * Suspension from lock expiries: each expiry that brings the buyer's count in the 30 days before it to
 * `maxExpiredLocks` or more suspends the buyer for 7 days from that expiry. Expiries before an operator's
 * reinstatement are forgiven. Pure, so the rule is the same wherever it is read.
 */
export function suspensionFromExpiries(expiries: Date[], maxExpiredLocks: number): Date | null {
  const sorted = [...expiries].sort((a, b) => a.getTime() - b.getTime());
  let until: Date | null = null;
  for (let k = 0; k < sorted.length; k++) {
    const at = sorted[k]!.getTime();
    const inWindow = sorted.filter((other) => other.getTime() <= at && other.getTime() > at - EXPIRED_LOCKS_WINDOW_DAYS * DAY_MS).length;
    if (inWindow >= maxExpiredLocks) {
      const end = new Date(at + SUSPENSION_DAYS * DAY_MS);
      if (!until || end > until) until = end;
    }
  }
  return until;
}

/** A buyer's standing now: counts from the orders it locked, suspension from its lock expiries and the operators. */
export async function buyerStanding(db: Queryable, policy: BuyerPolicy, buyer: BuyerRow, now = new Date()): Promise<BuyerStanding> {
  const [counts, expiries] = await Promise.all([
    db.query<{ open: string; open_mxn: string; completed: string; monthly: string }>(
      `SELECT count(*) FILTER (WHERE status = ANY($2)) AS open,
              coalesce(sum(total_mxn) FILTER (WHERE status = ANY($2)), 0) AS open_mxn,
              count(*) FILTER (WHERE status = 'COMPLETED') AS completed,
              coalesce(sum(total_mxn) FILTER (WHERE status = 'COMPLETED' AND completed_at >= $3), 0) AS monthly
         FROM orders WHERE lower(buyer_wallet) = $1`,
      [buyer.wallet, OPEN_LOCK_STATUSES, mexicoPeriodStart("month", now)],
    ),
    // Expiries that can still matter: their 7 days of suspension, or the 30 days they count in. A dispute
    // the buyer opened and lost (resolved SELLER) counts as an expiry at its resolution (decisions 17):
    // otherwise disputing would hold a lock, and the seller's CLABE, past its window without a count.
    db.query<{ at: Date }>(
      `SELECT t.created_at AS at FROM orders o JOIN order_timeline t ON t.order_id = o.id
        WHERE lower(o.buyer_wallet) = $1 AND t.created_at > $2 AND t.created_at > coalesce($3, '-infinity'::timestamptz)
          AND (t.event = 'LOCK_EXPIRED'
               OR (t.event = 'DISPUTE_RESOLVED' AND t.data->>'outcome' = 'SELLER'
                   AND (SELECT d.data->>'openedBy' FROM order_timeline d
                         WHERE d.order_id = o.id AND d.event = 'DISPUTED' AND d.seq < t.seq ORDER BY d.seq DESC LIMIT 1) = 'BUYER'))`,
      [buyer.wallet, new Date(now.getTime() - (EXPIRED_LOCKS_WINDOW_DAYS + SUSPENSION_DAYS) * DAY_MS), buyer.reinstated_at],
    ),
  ]);
  const row = counts.rows[0]!;
  const times = expiries.rows.map((expiry) => expiry.at);
  const exempt = isSandboxWallet(policy, buyer.wallet);
  const fromExpiries = exempt ? null : suspensionFromExpiries(times, policy.maxExpiredLocks);
  const candidates = [fromExpiries, buyer.suspended_until].filter((date): date is Date => date !== null && date.getTime() > now.getTime());
  const suspendedUntil = candidates.length ? new Date(Math.max(...candidates.map((date) => date.getTime()))) : null;
  return {
    status: suspendedUntil ? "SUSPENDED" : "ACTIVE",
    suspendedUntil,
    openLocks: Number(row.open),
    openLocksMxn: row.open_mxn,
    completedTrades: Number(row.completed),
    expiredLocks30d: times.filter((at) => at.getTime() > now.getTime() - EXPIRED_LOCKS_WINDOW_DAYS * DAY_MS).length,
    monthlyVolumeMxn: row.monthly,
  };
}

/** `GET /market/v1/me`, also each item of `GET /admin/v1/buyers` and the answer of its PATCH. */
export function buyerView(buyer: BuyerRow, standing: BuyerStanding, reputation: number) {
  return {
    wallet: getAddress(buyer.wallet),
    status: standing.status,
    kycStatus: buyer.kyc_status,
    kycTier: buyer.kyc_tier,
    reputation,
    openLocks: standing.openLocks,
    completedTrades: standing.completedTrades,
    expiredLocks30d: standing.expiredLocks30d,
    monthlyVolumeMxn: toJsonNumber(standing.monthlyVolumeMxn),
    suspendedUntil: standing.suspendedUntil?.toISOString() ?? null,
    kycCompletedAt: buyer.kyc_completed_at?.toISOString() ?? null,
    createdAt: buyer.created_at.toISOString(),
  };
}

/**
 * An operator sets a buyer's status: ACTIVE reinstates (lock expiries until now are forgiven, an
 * operator's suspension ends); SUSPENDED suspends for 7 days from now.
 */
export async function setBuyerStatus(db: Queryable, wallet: string, status: "ACTIVE" | "SUSPENDED", now = new Date()): Promise<BuyerRow> {
  const { rows } =
    status === "ACTIVE"
      ? await db.query<BuyerRow>("UPDATE buyers SET reinstated_at = $2, suspended_until = NULL, updated_at = now() WHERE wallet = $1 RETURNING *", [normaliseWallet(wallet), now])
      : await db.query<BuyerRow>("UPDATE buyers SET suspended_until = $2, updated_at = now() WHERE wallet = $1 RETURNING *", [
          normaliseWallet(wallet),
          new Date(now.getTime() + SUSPENSION_DAYS * DAY_MS),
        ]);
  if (!rows[0]) throw new NotFoundError(`No buyer with wallet ${wallet}`);
  return rows[0];
}

export async function listBuyers(db: Queryable, page: { limit: number; offset: number }): Promise<{ rows: BuyerRow[]; total: number }> {
  const [{ rows }, count] = await Promise.all([
    db.query<BuyerRow>("SELECT * FROM buyers ORDER BY created_at DESC, wallet LIMIT $1 OFFSET $2", [page.limit, page.offset]),
    db.query<{ n: string }>("SELECT count(*) AS n FROM buyers"),
  ]);
  return { rows, total: Number(count.rows[0]!.n) };
}

/**
 * The level a buyer must hold to lock (decisions 17): BASIC, FULL once its month reaches 50,000 MXN. The
 * month is what the buyer completed in it, what it holds open and what it asks to lock now (`amountsMxn`),
 * so a BASIC buyer cannot hold large locks before any volume completes.
 */
export function requiredBuyerLevel(...amountsMxn: string[]): KycLevel {
  const month = amountsMxn.reduce((sum, amount) => sum.plus(amount), money(0));
  return month.greaterThanOrEqualTo(FULL_THRESHOLD_MXN) ? "FULL" : "BASIC";
}
