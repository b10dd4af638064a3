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
