import { isoTimestamp, pageSchema } from "../http/schema.ts";
import { ORDER_STATUSES } from "../orders/machine.ts";
import { paymentReportSchema, REPORT_TAKEN } from "../payments/report-schema.ts";

// The market's answers (buyers.ts, order-book.ts, trades.ts views), for its document and the admin's.

const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;
const hex = (length: number) => ({ type: "string", pattern: `^0x[0-9a-fA-F]{${length}}$` }) as const;

/** buyers.ts buyerView: `GET /market/v1/me`, the admin's buyer list. */
export const buyerViewSchema = {
  type: "object",
  required: ["wallet", "status", "kycStatus", "kycTier", "reputation", "openLocks", "completedTrades", "expiredLocks30d", "monthlyVolumeMxn", "suspendedUntil", "kycCompletedAt", "createdAt"],
  properties: {
    wallet: hex(40),
    status: { enum: ["ACTIVE", "SUSPENDED"] },
    kycStatus: { type: "string" },
    kycTier: { type: "string" },
    reputation: { type: "number" },
    openLocks: { type: "integer" },
    completedTrades: { type: "integer" },
    expiredLocks30d: { type: "integer" },
    monthlyVolumeMxn: { type: "number" },
    suspendedUntil: nullableTimestamp,
    kycCompletedAt: nullableTimestamp,
    createdAt: isoTimestamp,
  },
} as const;

export const kycSessionStartedSchema = {
  type: "object",
  required: ["sessionId", "sessionUrl"],
  properties: { sessionId: { type: "string" }, sessionUrl: { type: "string", format: "uri" } },
} as const;

/** order-book.ts: the listed orders (decisions 17). */
export const orderBookPageSchema = pageSchema("orders", {
  type: "object",
  additionalProperties: false,
  required: ["escrowOrderId", "token", "amount", "receiveAmount", "totalMxn", "pricePerUnit", "bankName", "bankCode", "listingExpiresAt", "sellerReputation"],
  properties: {
    escrowOrderId: hex(64),
    token: { type: "string" },
    amount: { type: "number", description: "Token amount the seller deposited" },
    receiveAmount: { type: "number", description: "What the escrow releases to the buyer: amount less the partner's fee (rounded down to token units)" },
    totalMxn: { type: "number", description: "What the buyer pays by SPEI" },
    pricePerUnit: { type: "number", description: "totalMxn / amount, 4 decimals" },
    bankName: { type: "string" },
    bankCode: { type: "string", description: "The seller bank's 3-digit CLABE prefix" },
    listingExpiresAt: isoTimestamp,
    sellerReputation: { type: "number", description: "The seller's on-chain reputation (points)" },
  },
});

export const lockPermitSchema = {
  type: "object",
  required: ["permit", "signature", "escrowAddress", "chainId"],
  properties: {
    permit: { type: "object", required: ["orderId", "buyer", "deadline"], properties: { orderId: hex(64), buyer: hex(40), deadline: { type: "integer" } } },
    signature: { type: "string", pattern: "^0x[0-9a-fA-F]+$" },
    escrowAddress: hex(40),
    chainId: { type: "integer" },
  },
} as const;

/** trades.ts tradeListItem. */
const tradeListItemSchema = {
  type: "object",
  required: ["escrowOrderId", "status", "token", "amount", "totalMxn", "lockedAt", "lockExpiresAt", "completedAt"],
  properties: {
    escrowOrderId: hex(64),
    status: { enum: ORDER_STATUSES },
    token: { type: "string" },
    amount: { type: "number" },
    totalMxn: { type: "number" },
    lockedAt: nullableTimestamp,
    lockExpiresAt: nullableTimestamp,
    completedAt: nullableTimestamp,
  },
} as const;

export const tradesPageSchema = pageSchema("trades", tradeListItemSchema);

/** trades.ts latestPaymentReport: the buyer's latest report and what became of it. */
const latestReportSchema = paymentReportSchema(["PENDING", "VERIFIED", "REJECTED", "HELD"]);

/** trades.ts tradeDetail. */
export const tradeDetailSchema = {
  type: "object",
  required: [...tradeListItemSchema.required, "payment", "paymentReport", "releaseTxHash", "timeline"],
  properties: {
    ...tradeListItemSchema.properties,
    payment: {
      type: "object",
      required: ["clabe", "bankName", "bankCode", "amountMxn", "concept"],
      properties: { clabe: { type: "string" }, bankName: { type: "string" }, bankCode: { type: "string" }, amountMxn: { type: "number" }, concept: { type: "string" } },
    },
    paymentReport: { anyOf: [latestReportSchema, { type: "null" }] },
    releaseTxHash: { type: ["string", "null"] },
    timeline: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "event", "data", "timestamp"],
        properties: { id: { type: "string" }, event: { type: "string" }, data: { type: "object" }, timestamp: isoTimestamp },
      },
    },
  },
} as const;

/** `POST /market/v1/trades/:escrowOrderId/payment`. */
export const tradePaymentAnswerSchema = {
  type: "object",
  required: ["escrowOrderId", "status", "paymentReport"],
  properties: { escrowOrderId: hex(64), status: { enum: ORDER_STATUSES }, paymentReport: paymentReportSchema(REPORT_TAKEN) },
} as const;
