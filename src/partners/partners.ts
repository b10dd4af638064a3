import { withAudit, type AuditContext } from "./audit.ts";
import type { Queryable } from "../db/pool.ts";
import { NotFoundError, PartnerInactiveError, PartnerSuspendedError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { limitsFor, type LimitOverrides, type Tier, type TierLimits } from "../domain/tiers.ts";
import { apiKeyPrefix, generateApiKey, generateWebhookSecret, hashApiKey } from "./credentials.ts";

export type KycModel = "PARTNER_MANAGED" | "SERVICE_PROVIDED";
export type PartnerStatus = "ACTIVE" | "INACTIVE";
export type KybStatus = "APPROVED" | "SUSPENDED";

export interface Partner {
  id: string;
  name: string;
  tier: Tier;
  kycModel: KycModel;
  status: PartnerStatus;
  kybStatus: KybStatus;
  apiKeyPrefix: string;
  webhookUrl: string | null;
  ipAllowList: string[];
  feeWallet: string | null;
  limits: LimitOverrides;
  createdAt: Date;
  updatedAt: Date;
}

/** A partner as loaded for request handling: includes the key hash and webhook secret, never serialized. */
export interface PartnerWithSecrets extends Partner {
  apiKeyHash: Buffer;
  webhookSecret: string;
}

interface PartnerRow {
  id: string;
  name: string;
  tier: Tier;
  kyc_model: KycModel;
  status: PartnerStatus;
  kyb_status: KybStatus;
  api_key_hash: Buffer;
  api_key_prefix: string;
  webhook_secret: string;
  webhook_url: string | null;
  ip_allow_list: string[];
  fee_wallet: string | null;
  limits: LimitOverrides;
  created_at: Date;
  updated_at: Date;
}

function fromRow(row: PartnerRow): PartnerWithSecrets {
  return {
    id: row.id,
    name: row.name,
    tier: row.tier,
    kycModel: row.kyc_model,
    status: row.status,
    kybStatus: row.kyb_status,
    apiKeyPrefix: row.api_key_prefix,
    apiKeyHash: row.api_key_hash,
    webhookSecret: row.webhook_secret,
    webhookUrl: row.webhook_url,
    ipAllowList: row.ip_allow_list,
    feeWallet: row.fee_wallet,
    limits: row.limits,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function effectiveLimits(partner: Pick<Partner, "tier" | "limits">): TierLimits {
  return limitsFor(partner.tier, partner.limits);
}

/**
 * A partner that is not ACTIVE, or whose KYB is SUSPENDED, may change nothing (decisions sections 3 and
 * 18): its API key and its dashboard members' changes are refused, inactive first.
 */
export function assertPartnerInGoodStanding(partner: Pick<Partner, "status" | "kybStatus">): void {
  if (partner.status !== "ACTIVE") throw new PartnerInactiveError();
  if (partner.kybStatus === "SUSPENDED") throw new PartnerSuspendedError();
}

export interface NewPartner {
  name: string;
  tier: Tier;
  kycModel: KycModel;
  webhookUrl?: string | null;
  ipAllowList?: string[];
  feeWallet?: string | null;
  limits?: LimitOverrides;
}

export interface CreatedPartner {
  partner: Partner;
  apiKey: string;
  webhookSecret: string;
}

export async function createPartner(db: Queryable, input: NewPartner, audit?: AuditContext): Promise<CreatedPartner> {
  const apiKey = generateApiKey();
  const webhookSecret = generateWebhookSecret();
  const statement = withAudit(
    `INSERT INTO partners (id, name, tier, kyc_model, api_key_hash, api_key_prefix, webhook_secret, webhook_url, ip_allow_list, fee_wallet, limits)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
    [
      newId("ptn"),
      input.name,
      input.tier,
      input.kycModel,
      hashApiKey(apiKey),
      apiKeyPrefix(apiKey),
      webhookSecret,
      input.webhookUrl ?? null,
      input.ipAllowList ?? [],
      input.feeWallet ?? null,
      JSON.stringify(input.limits ?? {}),
    ],
    audit,
    "partner.created",
    { name: input.name, tier: input.tier, kycModel: input.kycModel },
  );
  const { rows } = await db.query<PartnerRow>(statement.sql, statement.values);
  return { partner: withoutSecrets(fromRow(rows[0]!)), apiKey, webhookSecret };
}

export function withoutSecrets(partner: PartnerWithSecrets): Partner {
  const { apiKeyHash: _hash, webhookSecret: _secret, ...rest } = partner;
  return rest;
}

export async function findPartnerByKeyHash(db: Queryable, keyHash: Buffer): Promise<PartnerWithSecrets | undefined> {
  const { rows } = await db.query<PartnerRow>("SELECT * FROM partners WHERE api_key_hash = $1", [keyHash]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function getPartner(db: Queryable, id: string): Promise<PartnerWithSecrets> {
  const { rows } = await db.query<PartnerRow>("SELECT * FROM partners WHERE id = $1", [id]);
  if (!rows[0]) throw new NotFoundError(`Partner ${id} does not exist`);
  return fromRow(rows[0]);
}

export async function listPartners(db: Queryable, limit: number, offset: number): Promise<{ partners: Partner[]; total: number }> {
  const { rows } = await db.query<PartnerRow & { total: string }>(
    "SELECT *, count(*) OVER () AS total FROM partners ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2",
    [limit, offset],
  );
  const total = rows[0] ? Number(rows[0].total) : (await db.query<{ n: string }>("SELECT count(*) AS n FROM partners")).rows[0]!.n;
  return { partners: rows.map((row) => withoutSecrets(fromRow(row))), total: Number(total) };
}

export interface PartnerChanges {
  name?: string;
  status?: PartnerStatus;
  kybStatus?: KybStatus;
  tier?: Tier;
  webhookUrl?: string | null;
  ipAllowList?: string[];
  feeWallet?: string | null;
  limits?: LimitOverrides;
}

const COLUMN: Record<keyof PartnerChanges, string> = {
  name: "name",
  status: "status",
  kybStatus: "kyb_status",
  tier: "tier",
  webhookUrl: "webhook_url",
  ipAllowList: "ip_allow_list",
  feeWallet: "fee_wallet",
  limits: "limits",
};

/** The audit action of a change: the dashboard's single-purpose changes get their own names. */
function changeAction(changes: PartnerChanges): string {
  const fields = Object.keys(changes).filter((field) => changes[field as keyof PartnerChanges] !== undefined);
  if (fields.length === 1 && fields[0] === "webhookUrl") return "webhook_url.updated";
  if (fields.length === 1 && fields[0] === "ipAllowList") return "ip_allow_list.updated";
  return "partner.updated";
}

/** Changes a partner; with `audit`, the change and its audit entry are one statement. */
export async function updatePartner(db: Queryable, id: string, changes: PartnerChanges, audit?: AuditContext): Promise<Partner> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [field, value] of Object.entries(changes) as [keyof PartnerChanges, unknown][]) {
    if (value === undefined) continue;
    values.push(field === "limits" ? JSON.stringify(value) : value);
    sets.push(`${COLUMN[field]} = $${values.length}`);
  }
  const statement = withAudit(`UPDATE partners SET ${[...sets, "updated_at = now()"].join(", ")} WHERE id = $1 RETURNING *`, values, audit, changeAction(changes), {
    changes,
  });
  const { rows } = await db.query<PartnerRow>(statement.sql, statement.values);
  if (!rows[0]) throw new NotFoundError(`Partner ${id} does not exist`);
  return withoutSecrets(fromRow(rows[0]));
}

/** Replaces the partner's one active key: the old key stops working at once. */
export async function rotateApiKey(db: Queryable, id: string, audit?: AuditContext): Promise<{ partner: Partner; apiKey: string }> {
  const apiKey = generateApiKey();
  const statement = withAudit(
    "UPDATE partners SET api_key_hash = $2, api_key_prefix = $3, updated_at = now() WHERE id = $1 RETURNING *",
    [id, hashApiKey(apiKey), apiKeyPrefix(apiKey)],
    audit,
    "api_key.rotated",
    { apiKeyPrefix: apiKeyPrefix(apiKey) },
  );
  const { rows } = await db.query<PartnerRow>(statement.sql, statement.values);
  if (!rows[0]) throw new NotFoundError(`Partner ${id} does not exist`);
  return { partner: withoutSecrets(fromRow(rows[0])), apiKey };
}

/** New webhook secret: every delivery attempt from now on is signed with it. */
export async function rotateWebhookSecret(db: Queryable, id: string, audit?: AuditContext): Promise<{ partner: Partner; webhookSecret: string }> {
  const webhookSecret = generateWebhookSecret();
  const statement = withAudit("UPDATE partners SET webhook_secret = $2, updated_at = now() WHERE id = $1 RETURNING *", [id, webhookSecret], audit, "webhook_secret.rotated");
  const { rows } = await db.query<PartnerRow>(statement.sql, statement.values);
  if (!rows[0]) throw new NotFoundError(`Partner ${id} does not exist`);
  return { partner: withoutSecrets(fromRow(rows[0])), webhookSecret };
}

/** The partner as the admin API shows it (never keys or secrets). */
export function partnerView(partner: Partner) {
  return {
    id: partner.id,
    name: partner.name,
    tier: partner.tier,
    kycModel: partner.kycModel,
    status: partner.status,
    kybStatus: partner.kybStatus,
    apiKeyPrefix: partner.apiKeyPrefix,
    webhookUrl: partner.webhookUrl,
    ipAllowList: partner.ipAllowList,
    feeWallet: partner.feeWallet,
    limits: partner.limits,
    effectiveLimits: effectiveLimits(partner),
    createdAt: partner.createdAt.toISOString(),
    updatedAt: partner.updatedAt.toISOString(),
  };
}
