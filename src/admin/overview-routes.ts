import type { SignerBalance } from "../chain/signer-balance.ts";
import type { Pool } from "../db/pool.ts";
import type { RouteGroup } from "../http/routes.ts";
import { MONTH_PATTERN } from "../domain/periods.ts";
import { machineDescription } from "./machine-definition.ts";
import { machineSchema, partnerRevenueSchema, revenueReportSchema, signersSchema, statsSchema } from "./overview-schema.ts";
import { partnerRevenue, revenueReport } from "./revenue.ts";
import { adminStats } from "./stats.ts";

const monthQuery = {
  type: "object",
  additionalProperties: false,
  properties: { month: { type: "string", pattern: MONTH_PATTERN, description: "YYYY-MM (America/Mexico_City); default the current month" } },
} as const;

/**
 * `GET /admin/v1/machine`, `/stats`, `/revenue` and `/partners/:id/revenue` (decisions sections 5 and 12),
 * and with a chain `/signers` (decisions 7: the balances of the keys that pay for the service's gas).
 */
export function adminOverviewRoutes(admin: RouteGroup, deps: { pool: Pool; signers?: () => Promise<SignerBalance[]> }): void {
  const { pool, signers } = deps;

  if (signers) {
    admin.add(
      {
        method: "get",
        path: "/signers",
        tag: "Overview",
        summary: "The balances of the service signer and the arbiter, read from the chain now, and whether each is low",
        description:
          "Low: below SIGNER_MIN_BALANCE_ETH, or below a day of the key's recent spending (`dailySpendEth`, measured by this instance since it started, over at most 24 h). " +
          "Top the key up before it runs dry: without gas the service cannot confirm payments or refund escrows (docs/operations.md).",
        responses: { 200: { description: "{ signers: [{ role, address, balanceEth, minimumEth, dailySpendEth, low, reason, checkedAt }] }", schema: signersSchema } },
        errors: ["CHAIN_UNAVAILABLE"],
      },
      async (ctx) => {
        ctx.body = { signers: await signers() };
      },
    );
  }

  admin.add(
    {
      method: "get",
      path: "/machine",
      tag: "Overview",
      summary: "The order state machine's definition, for drawing",
      description:
        "`definition` is the XState machine definition as the service runs it; `states` (name, final, initial, internalEvents) and " +
        "`transitions` (from, to, event, guard) are the same facts flattened for a renderer.",
      responses: { 200: { description: "{ id, initial, states, finalStates, transitions, definition }", schema: machineSchema } },
    },
    async (ctx) => {
      ctx.body = machineDescription();
    },
  );

  admin.add(
    {
      method: "get",
      path: "/stats",
      tag: "Overview",
      summary: "Orders per state, webhook deliveries per status, queue sizes",
      responses: { 200: { description: "{ orders: { byStatus, total }, deliveries: { byStatus, total }, queues: { disputes, highRisk, sanctionsHolds, thirdPartyPayments }, generatedAt }", schema: statsSchema } },
    },
    async (ctx) => {
      ctx.body = await adminStats(pool);
    },
  );

  admin.add<unknown, { month?: string }>(
    {
      method: "get",
      path: "/revenue",
      tag: "Overview",
      summary: "Per partner, for a month: completed volume, partner fees collected and the service's revenue share of them",
      description: "Counts orders COMPLETED in the month (Mexico City). Amounts in MXN (per-order cents, summed) and USDC (exactly as the escrow paid). See docs/operator-console.md.",
      query: monthQuery,
      responses: { 200: { description: "{ month, timeZone, from, to, partners, totals }", schema: revenueReportSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await revenueReport(pool, query.month);
    },
  );

  admin.add<unknown, { month?: string }>(
    {
      method: "get",
      path: "/partners/:id/revenue",
      tag: "Partners",
      summary: "One partner's month: completed volume, partner fees collected and the service's revenue share",
      query: monthQuery,
      responses: { 200: { description: "Partner revenue", schema: partnerRevenueSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { params, query }) => {
      ctx.body = await partnerRevenue(pool, params.id!, query.month);
    },
  );
}
