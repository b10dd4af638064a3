import { isoTimestamp } from "../http/schema.ts";
import { ORDER_STATUSES } from "./machine.ts";

// The order as the partner API and the dashboard answer it (queries.ts views), for their documents.

const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;
const nullableString = { type: ["string", "null"] } as const;

/** queries.ts orderListItem. */
export const orderListItemSchema = {
  type: "object",
  required: ["id", "escrowOrderId", "status", "token", "amount", "totalMxn", "pricePerUnit", "fxRateUsdMxn", "amlRiskLevel", "partnerUserRef", "createdAt", "completedAt", "expiresAt"],
  properties: {
    id: { type: "string" },
    escrowOrderId: { type: "string" },
    status: { enum: ORDER_STATUSES },
    token: { type: "string" },
    amount: { type: "number" },
    totalMxn: { type: "number" },
    pricePerUnit: { type: "number" },
    fxRateUsdMxn: { type: "number" },
    amlRiskLevel: { enum: ["LOW", "MEDIUM", "HIGH"] },
    partnerUserRef: { type: "string" },
    createdAt: isoTimestamp,
    completedAt: nullableTimestamp,
    expiresAt: isoTimestamp,
  },
} as const;

/** What the seller's wallet needs to call `deposit` (queries.ts depositView). */
const depositSchema = {
  type: "object",
  required: ["chainId", "escrowAddress", "tokenAddress", "amountRaw", "deadline", "terms", "signature"],
  properties: {
    chainId: { type: "integer" },
    escrowAddress: { type: "string" },
    tokenAddress: { type: "string" },
    amountRaw: { type: "string" },
    deadline: isoTimestamp,
    terms: {
      type: "object",
      required: ["orderId", "token", "amount", "feeBps", "feeRecipient", "treasuryShareBps", "depositDeadline", "listingWindow", "lockWindow"],
      properties: {
        orderId: { type: "string" },
        token: { type: "string" },
        amount: { type: "string" },
        feeBps: { type: "integer" },
        feeRecipient: { type: "string" },
        treasuryShareBps: { type: "integer" },
        depositDeadline: { type: "string" },
        listingWindow: { type: "string" },
        lockWindow: { type: "string" },
      },
    },
    signature: { type: "string" },
  },
} as const;

/** `POST /orders` (queries.ts orderCreateView). */
export const orderCreateSchema = {
  type: "object",
  required: ["id", "escrowOrderId", "status", "token", "amountUsdc", "totalMxn", "exchangeRate", "sellerClabe", "amlRiskLevel", "expiresAt", "createdAt", "deposit"],
  properties: {
    id: { type: "string" },
    escrowOrderId: { type: "string" },
    status: { enum: ORDER_STATUSES },
    token: { type: "string" },
    amountUsdc: { type: "number" },
    totalMxn: { type: "number" },
    exchangeRate: { type: "number" },
    sellerClabe: { type: "string" },
    amlRiskLevel: { enum: ["LOW", "MEDIUM", "HIGH"] },
    expiresAt: isoTimestamp,
    createdAt: isoTimestamp,
    deposit: depositSchema,
  },
} as const;

/** `GET /orders/:id` (queries.ts orderDetailView). */
export const orderDetailSchema = {
  type: "object",
  required: [
    ...orderListItemSchema.required,
    "amountRaw",
    "spread",
    "escrowTxHash",
    "escrowStatus",
    "sellerWallet",
    "buyerWallet",
    "lockedAt",
    "lockExpiresAt",
    "bankAccount",
    "paymentConcept",
    "dispute",
    "timeline",
    "deposit",
  ],
  properties: {
    ...orderListItemSchema.properties,
    amountRaw: { type: "string" },
    fxRateSource: { type: "string" },
    spread: { type: "object", required: ["percent", "mxn"], properties: { percent: { type: "number" }, mxn: { type: "number" } } },
    escrowTxHash: nullableString,
    escrowStatus: { enum: ["PENDING", "CONFIRMED"] },
    releaseTxHash: nullableString,
    refundTxHash: nullableString,
    sellerWallet: nullableString,
    buyerWallet: nullableString,
    lockedAt: nullableTimestamp,
    lockExpiresAt: nullableTimestamp,
    bankAccount: {
      type: "object",
      required: ["bankName", "bankCode", "clabe"],
      properties: { bankName: { type: "string" }, bankCode: { type: "string" }, clabe: { type: "string" } },
    },
    cepValidatedAt: nullableTimestamp,
    cepTrackingKey: nullableString,
    paymentConcept: { type: "string" },
    amlRiskScore: { type: "number" },
    dispute: { type: ["object", "null"], properties: { openedBy: { type: "string" }, outcome: nullableString } },
    timeline: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "event", "data", "timestamp"],
        properties: { id: { type: "string" }, event: { type: "string" }, data: { type: "object" }, timestamp: isoTimestamp },
      },
    },
    deposit: depositSchema,
  },
} as const;

/** An admin order's dispute (admin/orders.ts): with the operator's pending resolution, if any. */
const adminDisputeSchema = {
  type: ["object", "null"],
  properties: { openedBy: { type: "string" }, outcome: nullableString, resolutionRequest: { type: ["object", "null"] } },
} as const;

/** admin/orders.ts adminOrderListItem. */
export const adminOrderListItemSchema = {
  type: "object",
  required: [...orderListItemSchema.required, "partnerId", "partnerName", "amlRiskScore", "dispute", "sanctionsHold"],
  properties: {
    ...orderListItemSchema.properties,
    partnerId: { type: "string" },
    partnerName: { type: "string" },
    amlRiskScore: { type: "number" },
    dispute: adminDisputeSchema,
    sanctionsHold: { type: ["object", "null"] },
  },
} as const;

/** A wallet's reputation as indexed (admin/orders.ts readReputation). */
export const reputationSchema = {
  type: "object",
  required: ["address", "score", "updatedBlock", "updatedAt"],
  properties: { address: { type: "string" }, score: { type: "number" }, updatedBlock: { type: ["integer", "null"] }, updatedAt: nullableTimestamp },
} as const;

/** admin/orders.ts adminOrderDetail: the partner's detail plus what operators see. */
export const adminOrderDetailSchema = {
  type: "object",
  required: [...orderDetailSchema.required, "partnerId", "partnerName", "partnerTier", "fee", "sanctionsHold", "machine", "path", "deliveries", "transactions", "escrow", "reputation"],
  properties: {
    ...orderDetailSchema.properties,
    partnerId: { type: "string" },
    partnerName: nullableString,
    partnerTier: nullableString,
    fee: {
      type: "object",
      required: ["feePercent", "feeRecipient", "feeBps", "treasuryShareBps"],
      properties: { feePercent: { type: "number" }, feeRecipient: { type: "string" }, feeBps: { type: "integer" }, treasuryShareBps: { type: "integer" } },
    },
    dispute: adminDisputeSchema,
    sanctionsHold: { type: ["object", "null"] },
    machine: { type: "object", required: ["value", "context", "version"], properties: { value: { enum: ORDER_STATUSES }, context: { type: "object" }, version: { type: "integer" } } },
    path: { type: "array" },
    deliveries: { type: "array", items: { type: "object" } },
    transactions: { type: "array", items: { type: "object" } },
    escrow: { type: ["object", "null"] },
    reputation: {
      type: "object",
      required: ["seller", "buyer"],
      properties: { seller: { anyOf: [reputationSchema, { type: "null" }] }, buyer: { anyOf: [reputationSchema, { type: "null" }] } },
    },
  },
} as const;
