import type { Pool } from "../db/pool.ts";
import type { RouteGroup } from "../http/routes.ts";
import { MONTH_PATTERN } from "../domain/periods.ts";
import { kycUsage } from "../kyc/usage.ts";

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
      responses: { 200: { description: "KYC usage" } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { params, query }) => {
      ctx.body = await kycUsage(deps.pool, params.id!, query.month);
    },
  );
}
