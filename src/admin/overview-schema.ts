import { MONTH_PATTERN } from "../domain/periods.ts";
import { isoTimestamp } from "../http/schema.ts";
import { ORDER_STATUSES } from "../orders/machine.ts";

// The overview's answers (machine-definition.ts, stats.ts, revenue.ts), for the admin document.

const counts = { type: "object", additionalProperties: { type: "integer" } } as const;

/** machine-definition.ts MachineDescription. */
export const machineSchema = {
  type: "object",
  required: ["id", "initial", "states", "finalStates", "transitions", "definition"],
  properties: {
    id: { type: "string" },
    initial: { enum: ORDER_STATUSES },
    states: { type: "array", items: { type: "object" } },
    finalStates: { type: "array", items: { enum: ORDER_STATUSES } },
    transitions: { type: "array", items: { type: "object" } },
    definition: { type: "object" },
  },
} as const;

/** stats.ts adminStats. */
export const statsSchema = {
  type: "object",
  required: ["orders", "deliveries", "queues", "generatedAt"],
  properties: {
    orders: { type: "object", required: ["byStatus", "total"], properties: { byStatus: counts, total: { type: "integer" } } },
    deliveries: { type: "object", required: ["byStatus", "total"], properties: { byStatus: counts, total: { type: "integer" } } },
    queues: {
      type: "object",
      required: ["disputes", "highRisk", "sanctionsHolds"],
      properties: { disputes: { type: "integer" }, highRisk: { type: "integer" }, sanctionsHolds: { type: "integer" } },
    },
    generatedAt: isoTimestamp,
  },
} as const;

/** revenue.ts Amounts: MXN, USDC and exact token units. */
const amounts = {
  type: "object",
  required: ["mxn", "usdc", "usdcRaw"],
  properties: { mxn: { type: "number" }, usdc: { type: "number" }, usdcRaw: { type: "string", pattern: "^-?[0-9]+$" } },
} as const;

const period = {
  month: { type: "string", pattern: MONTH_PATTERN },
  timeZone: { type: "string" },
  from: isoTimestamp,
  to: isoTimestamp,
} as const;

const totals = {
  completedOrders: { type: "integer" },
  feeOrders: { type: "integer" },
  volume: amounts,
  partnerFees: amounts,
  serviceShare: amounts,
  partnerNet: amounts,
  owedToPartnerUsdc: { type: "number" },
  owedToPartnerUsdcRaw: { type: "string", pattern: "^[0-9]+$" },
} as const;
const totalsRequired = Object.keys(totals);

/** revenue.ts PartnerRevenue (one partner's month, or an entry of the report). */
const partnerRevenueProperties = { partnerId: { type: "string" }, name: { type: "string" }, tier: { type: "string" }, ...totals } as const;

export const partnerRevenueSchema = {
  type: "object",
  required: ["month", "timeZone", "from", "to", "partnerId", "name", "tier", ...totalsRequired],
  properties: { ...period, ...partnerRevenueProperties },
} as const;

/** revenue.ts revenueReport. */
export const revenueReportSchema = {
  type: "object",
  required: ["month", "timeZone", "from", "to", "partners", "totals"],
  properties: {
    ...period,
    partners: { type: "array", items: { type: "object", required: ["partnerId", "name", "tier", ...totalsRequired], properties: partnerRevenueProperties } },
    totals: { type: "object", required: totalsRequired, properties: totals },
  },
} as const;

/** chain/signer-balance.ts SignerBalance, for `GET /admin/v1/signers`. */
export const signersSchema = {
  type: "object",
  required: ["signers"],
  properties: {
    signers: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["role", "address", "balanceEth", "minimumEth", "dailySpendEth", "low", "reason", "checkedAt"],
        properties: {
          role: { enum: ["service", "arbiter"] },
          address: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" },
          balanceEth: { type: "string" },
          minimumEth: { type: "string" },
          dailySpendEth: { type: "string" },
          low: { type: "boolean" },
          reason: { type: ["string", "null"] },
          checkedAt: isoTimestamp,
        },
      },
    },
  },
} as const;
