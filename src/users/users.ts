import { prepared, type Queryable } from "../db/pool.ts";
import { DuplicateUserError, NotFoundError, UserLimitReachedError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { toJsonNumber } from "../domain/money.ts";
import type { KycLevel } from "../domain/kyc.ts";
import { mexicoPeriodStart } from "../domain/periods.ts";

export type KycStatus = "NOT_REQUIRED" | "PENDING" | "APPROVED" | "REJECTED";
export type KycTier = "NONE" | KycLevel;
export type AmlRiskLevel = "LOW" | "MEDIUM" | "HIGH";

export interface User {
  id: string;
  partnerId: string;
  partnerUserRef: string;
  kycStatus: KycStatus;
  kycTier: KycTier;
  kycCompletedAt: Date | null;
  amlRiskLevel: AmlRiskLevel | null;
  isPep: boolean;
  isSanctioned: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface UserRow {
  id: string;
  partner_id: string;
  partner_user_ref: string;
  kyc_status: KycStatus;
  kyc_tier: KycTier;
  kyc_completed_at: Date | null;
  aml_risk_level: AmlRiskLevel | null;
  is_pep: boolean;
  is_sanctioned: boolean;
  created_at: Date;
  updated_at: Date;
}

function fromRow(row: UserRow): User {
  return {
    id: row.id,
    partnerId: row.partner_id,
    partnerUserRef: row.partner_user_ref,
    kycStatus: row.kyc_status,
    kycTier: row.kyc_tier,
    kycCompletedAt: row.kyc_completed_at,
    amlRiskLevel: row.aml_risk_level,
    isPep: row.is_pep,
    isSanctioned: row.is_sanctioned,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface KycAttestation {
  level: KycLevel;
  verifiedAt: Date;
}

/** The partner's registered users: what the tier's user limit counts (and the dashboard shows). */
export async function countPartnerUsers(db: Queryable, partnerId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1", [partnerId]);
  return Number(rows[0]!.n);
}

/**
 * Registers a user for a partner. Under a tier's user limit the partner row is locked while counting, so
 * concurrent registrations cannot pass the limit together; without one, registrations of one partner do
 * not wait on each other (a payroll partner registers its staff at once), and the unique key on the
 * partner's refs decides a race for one ref. Must run inside a transaction.
 */
export async function createUser(
  tx: Queryable,
  input: { partnerId: string; partnerUserRef: string; email?: string; attestation?: KycAttestation; maxUsers: number | null },
): Promise<User> {
  const duplicate = () => new DuplicateUserError(`A user with partnerUserRef "${input.partnerUserRef}" already exists`);
  if (input.maxUsers !== null) {
    // NO KEY UPDATE, as for order creation: serializes creators without blocking foreign key checks.
    await tx.query("SELECT 1 FROM partners WHERE id = $1 FOR NO KEY UPDATE", [input.partnerId]);
    const existing = await tx.query("SELECT 1 FROM users WHERE partner_id = $1 AND partner_user_ref = $2", [input.partnerId, input.partnerUserRef]);
    if (existing.rowCount) throw duplicate();
    if ((await countPartnerUsers(tx, input.partnerId)) >= input.maxUsers) throw new UserLimitReachedError(`The tier allows at most ${input.maxUsers} users`);
  }
  const attested = input.attestation;
  const { rows } = await tx.query<UserRow>(
    `INSERT INTO users (id, partner_id, partner_user_ref, email, kyc_status, kyc_tier, kyc_completed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (partner_id, partner_user_ref) DO NOTHING RETURNING *`,
    [
      newId("usr"),
      input.partnerId,
      input.partnerUserRef,
      input.email ?? null,
      attested ? "APPROVED" : "NOT_REQUIRED",
      attested ? attested.level : "NONE",
      attested ? attested.verifiedAt : null,
    ],
  );
  if (!rows[0]) throw duplicate();
  return fromRow(rows[0]);
}

export async function findUserByRef(db: Queryable, partnerId: string, partnerUserRef: string, forUpdate = false): Promise<User | undefined> {
  const { rows } = await db.query<UserRow>(
    `SELECT * FROM users WHERE partner_id = $1 AND partner_user_ref = $2${forUpdate ? " FOR NO KEY UPDATE" : ""}`,
    [partnerId, partnerUserRef],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function getUserByRef(db: Queryable, partnerId: string, partnerUserRef: string, forUpdate = false): Promise<User> {
  const user = await findUserByRef(db, partnerId, partnerUserRef, forUpdate);
  if (!user) throw new NotFoundError(`No user with partnerUserRef "${partnerUserRef}"`);
  return user;
}

const LEVEL_RANK: Record<KycTier, number> = { NONE: 0, BASIC: 1, FULL: 2 };

/**
 * Records an approved KYC level (attestation or provider decision): status APPROVED; the tier is the
 * highest level ever approved and `kycCompletedAt` the time of that approval (decisions section 4).
 */
export async function approveKyc(db: Queryable, userId: string, level: KycLevel, at: Date): Promise<User> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users SET kyc_status = 'APPROVED',
       kyc_tier = CASE WHEN $3 > (CASE kyc_tier WHEN 'FULL' THEN 2 WHEN 'BASIC' THEN 1 ELSE 0 END) THEN $2 ELSE kyc_tier END,
       kyc_completed_at = CASE WHEN $3 > (CASE kyc_tier WHEN 'FULL' THEN 2 WHEN 'BASIC' THEN 1 ELSE 0 END) THEN $4 ELSE kyc_completed_at END,
       updated_at = now()
     WHERE id = $1 RETURNING *`,
    [userId, level, LEVEL_RANK[level], at],
  );
  if (!rows[0]) throw new NotFoundError("The user does not exist");
  return fromRow(rows[0]);
}

export interface UserVolumes {
  orderCount: number;
  totalVolumeMxn: string;
  monthlyVolumeMxn: string;
}

/**
 * Volume counts the `totalMxn` of orders that did not end EXPIRED (decisions section 3); the month is the
 * calendar month in America/Mexico_City, whose start is the parameter `monthStart`.
 */
const monthlyVolume = (monthStart: string) => `coalesce(sum(total_mxn) FILTER (WHERE status <> 'EXPIRED' AND created_at >= ${monthStart}), 0)`;

export async function userVolumes(db: Queryable, userId: string, now = new Date()): Promise<UserVolumes> {
  const { rows } = await db.query<{ order_count: string; total: string; monthly: string }>(
    prepared(
      `SELECT count(*) AS order_count, coalesce(sum(total_mxn) FILTER (WHERE status <> 'EXPIRED'), 0) AS total, ${monthlyVolume("$2")} AS monthly
         FROM orders WHERE user_id = $1`,
      [userId, mexicoPeriodStart("month", now)],
    ),
  );
  const row = rows[0]!;
  return { orderCount: Number(row.order_count), totalVolumeMxn: row.total, monthlyVolumeMxn: row.monthly };
}

/** What a new order's KYC and AML checks read of the user's earlier orders (decisions 3 and 6). */
export interface UserOrderHistory {
  monthlyVolumeMxn: string;
  ordersLast24h: number;
  /** Every wallet that sold or bought in the user's orders. */
  wallets: string[];
}

/**
 * `UserOrderHistory` as one statement's select list over the user's rows of `orders`
 * (`SELECT ${orderHistoryColumns("$2")} FROM orders WHERE user_id = $1`): the month's start is the parameter
 * `monthStart`. Read after the user's row is locked, so it sees the user's every earlier order.
 */
export const orderHistoryColumns = (monthStart: string) =>
  `${monthlyVolume(monthStart)} AS monthly, count(*) FILTER (WHERE created_at > now() - interval '24 hours') AS last_24h,
   coalesce(array_agg(DISTINCT seller_wallet) FILTER (WHERE seller_wallet IS NOT NULL), '{}')
     || coalesce(array_agg(DISTINCT buyer_wallet) FILTER (WHERE buyer_wallet IS NOT NULL), '{}') AS wallets`;

export interface OrderHistoryRow {
  monthly: string;
  last_24h: string;
  wallets: string[];
}

export const orderHistoryFromRow = (row: OrderHistoryRow): UserOrderHistory => ({ monthlyVolumeMxn: row.monthly, ordersLast24h: Number(row.last_24h), wallets: row.wallets });

/** `UserOrderHistory` in one statement: run it after the user's row is locked, so it sees the user's every earlier order. */
export async function userOrderHistory(db: Queryable, userId: string, now: Date): Promise<UserOrderHistory> {
  const { rows } = await db.query<OrderHistoryRow>(prepared(`SELECT ${orderHistoryColumns("$2")} FROM orders WHERE user_id = $1`, [userId, mexicoPeriodStart("month", now)]));
  return orderHistoryFromRow(rows[0]!);
}

/** `POST /users` response (spec: User create-response fields). */
export function userCreateView(user: User, volumes: UserVolumes) {
  return {
    id: user.id,
    partnerUserRef: user.partnerUserRef,
    kycStatus: user.kycStatus,
    kycTier: user.kycTier,
    orderCount: volumes.orderCount,
    totalVolumeMxn: toJsonNumber(volumes.totalVolumeMxn),
    createdAt: user.createdAt.toISOString(),
  };
}

/** `GET /users/:ref` response (spec: User detail). */
export function userDetailView(user: User, volumes: UserVolumes) {
  return {
    ...userCreateView(user, volumes),
    kycCompletedAt: user.kycCompletedAt?.toISOString() ?? null,
    monthlyVolumeMxn: toJsonNumber(volumes.monthlyVolumeMxn),
    amlRiskLevel: user.amlRiskLevel,
    isPep: user.isPep,
    isSanctioned: user.isSanctioned,
    updatedAt: user.updatedAt.toISOString(),
  };
}

/** A KYC session was started for the user: status PENDING (a REJECTED or APPROVED user too); the tier is kept. */
export async function markKycPending(db: Queryable, userId: string): Promise<User> {
  const { rows } = await db.query<UserRow>(
    "UPDATE users SET kyc_status = 'PENDING', updated_at = now() WHERE id = $1 RETURNING *",
    [userId],
  );
  if (!rows[0]) throw new NotFoundError("The user does not exist");
  return fromRow(rows[0]);
}

/**
 * The provider rejected a verification: status REJECTED. The tier (highest level ever approved) and
 * `kycCompletedAt` stay: a user approved for FULL holds FULL whatever happens later (decisions section 4).
 */
export async function rejectKyc(db: Queryable, userId: string): Promise<User> {
  const { rows } = await db.query<UserRow>(
    "UPDATE users SET kyc_status = 'REJECTED', updated_at = now() WHERE id = $1 RETURNING *",
    [userId],
  );
  if (!rows[0]) throw new NotFoundError("The user does not exist");
  return fromRow(rows[0]);
}

/**
 * Records the provider's PEP / sanctions screening. Flags are only ever raised here: a later "no match"
 * (or a session that ran no screening) does not clear a match already reported; clearing is an operator
 * decision. Nothing is written when nothing changes.
 */
export async function setScreening(db: Queryable, userId: string, flags: { isPep: boolean; isSanctioned: boolean }): Promise<void> {
  await db.query(
    `UPDATE users SET is_pep = is_pep OR $2, is_sanctioned = is_sanctioned OR $3, updated_at = now()
      WHERE id = $1 AND ((NOT is_pep AND $2) OR (NOT is_sanctioned AND $3))`,
    [userId, flags.isPep, flags.isSanctioned],
  );
}

export async function getUserById(db: Queryable, userId: string): Promise<User> {
  const { rows } = await db.query<UserRow>("SELECT * FROM users WHERE id = $1", [userId]);
  if (!rows[0]) throw new NotFoundError("The user does not exist");
  return fromRow(rows[0]);
}
