import { TIERS } from "../domain/tiers.ts";
import { isoTimestamp, pageSchema } from "../http/schema.ts";

// The partner as the admin API and the dashboard answer it (partners.ts partnerView), for their documents.

const nullableCount = { type: ["integer", "null"] } as const;
const nullableDecimal = { type: ["string", "null"], description: "Decimal MXN amount; null means unlimited" } as const;

export const partnerViewSchema = {
  type: "object",
  required: ["id", "name", "tier", "kycModel", "status", "kybStatus", "apiKeyPrefix", "webhookUrl", "ipAllowList", "feeWallet", "limits", "effectiveLimits", "createdAt", "updatedAt"],
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    tier: { enum: TIERS },
    kycModel: { enum: ["PARTNER_MANAGED", "SERVICE_PROVIDED"] },
    status: { enum: ["ACTIVE", "INACTIVE"] },
    kybStatus: { enum: ["APPROVED", "SUSPENDED"] },
    apiKeyPrefix: { type: "string" },
    webhookUrl: { type: ["string", "null"] },
    ipAllowList: { type: "array", items: { type: "string" } },
    feeWallet: { type: ["string", "null"] },
    limits: { type: "object", description: "ENTERPRISE overrides as set" },
    effectiveLimits: {
      type: "object",
      required: ["requestsPerMinute", "maxUsers", "monthlyVolumeMxn", "dailyVolumeMxn", "kycIncludedPerMonth", "kycCapPerMonth", "revenueSharePercent"],
      properties: {
        requestsPerMinute: { type: "integer" },
        maxUsers: nullableCount,
        monthlyVolumeMxn: nullableDecimal,
        dailyVolumeMxn: nullableDecimal,
        kycIncludedPerMonth: { type: "integer" },
        kycCapPerMonth: nullableCount,
        revenueSharePercent: { type: "string", description: "Decimal percent" },
      },
    },
    createdAt: isoTimestamp,
    updatedAt: isoTimestamp,
  },
} as const;

/** The partner with a credential shown this once (creation, rotation). */
export function partnerWithSecretsSchema(...secrets: ("apiKey" | "webhookSecret")[]) {
  return {
    ...partnerViewSchema,
    required: [...partnerViewSchema.required, ...secrets],
    properties: { ...partnerViewSchema.properties, ...Object.fromEntries(secrets.map((name) => [name, { type: "string" }])) },
  };
}

/** A page of the partner's audit log (audit.ts listAudit). */
export const auditPageSchema = pageSchema("entries", {
  type: "object",
  required: ["id", "action", "actor", "at", "address", "details"],
  properties: {
    id: { type: "string" },
    action: { type: "string" },
    actor: {
      type: "object",
      required: ["type", "id", "email"],
      properties: { type: { enum: ["MEMBER", "OPERATOR"] }, id: { type: "string" }, email: { type: ["string", "null"] } },
    },
    at: isoTimestamp,
    address: { type: ["string", "null"] },
    details: { type: "object" },
  },
});
