import type { Pool } from "../db/pool.ts";
import type { RouteGroup } from "../http/routes.ts";
import { MONTH_PATTERN } from "../domain/periods.ts";
import { isoTimestamp } from "../http/schema.ts";
import { kycUsage } from "../kyc/usage.ts";

const levelCounts = { type: "object", required: ["BASIC", "FULL"], properties: { BASIC: { type: "number" }, FULL: { type: "number" } } } as const;
/** kyc/usage.ts KycUsage. */
const kycUsageSchema = {
  type: "object",
  required: ["partnerId", "tier", "month", "periodStart", "periodEnd", "includedPerMonth", "capPerMonth", "sessions", "counts", "included", "billed", "billedAmountUsd", "failedAttempts", "prices"],
  properties: {
    partnerId: { type: "string" },
    tier: { type: "string" },
    month: { type: "string", pattern: MONTH_PATTERN },
    periodStart: isoTimestamp,
    periodEnd: isoTimestamp,
    includedPerMonth: { type: "integer" },
    capPerMonth: { type: ["integer", "null"] },
    sessions: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "sessionId", "userId", "partnerUserRef", "level", "status", "billed", "priceUsd", "isPep", "isSanctioned", "createdAt", "decidedAt"],
        properties: {
          id: { type: "string" },
          sessionId: { type: "string" },
          userId: { type: "string" },
          partnerUserRef: { type: "string" },
          level: { enum: ["BASIC", "FULL"] },
          status: { enum: ["PENDING", "APPROVED", "REJECTED"] },
          billed: { type: "boolean" },
          priceUsd: { type: "number" },
          isPep: { type: "boolean" },
          isSanctioned: { type: "boolean" },
          createdAt: isoTimestamp,
          decidedAt: { type: ["string", "null"], format: "date-time" },
        },
      },
    },
    counts: { ...levelCounts, required: [...levelCounts.required, "total"], properties: { ...levelCounts.properties, total: { type: "integer" } } },
    included: { type: "integer" },
    billed: { type: "integer" },
    billedAmountUsd: { type: "number" },
    failedAttempts: { type: "integer" },
    prices: levelCounts,
  },
} as const;

/**
 * `GET /admin/v1/partners/:id/kyc-usage?month=YYYY-MM`: a partner's KYC sessions for a Mexico City calendar
 * month (default: the current one), counts by level, included and billed counts and the billed amount.
 */
export function adminKycRoutes(admin: RouteGroup, deps: { pool: Pool }): void {
  admin.add<unknown, { month?: string }>(
    {
      method: "get",
      path: "/partners/:id/kyc-usage",
      tag: "Partners",
      summary: "A partner's KYC sessions and billing for a month",
      query: {
        type: "object",
        additionalProperties: false,
        properties: { month: { type: "string", pattern: MONTH_PATTERN, description: "YYYY-MM (America/Mexico_City); default the current month" } },
      },
      responses: { 200: { description: "KYC usage", schema: kycUsageSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { params, query }) => {
      ctx.body = await kycUsage(deps.pool, params.id!, query.month);
    },
  );
}
