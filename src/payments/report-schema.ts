import { ORDER_STATUSES } from "../orders/machine.ts";

/**
 * One payment report as the partner and market answers show it (report.ts, market/trades.ts), with the
 * verification states the answer can carry: a report just taken is PENDING or VERIFIED; a trade's latest
 * may also be REJECTED or HELD (with `holdReason`).
 */
export function paymentReportSchema<const Verification extends readonly string[]>(verification: Verification) {
  return {
    type: "object",
    required: ["trackingKey", "operationDate", "senderBankCode", "senderBankName", "amountMxn", "verification"],
    properties: {
      trackingKey: { type: "string" },
      operationDate: { type: "string", format: "date" },
      senderBankCode: { type: "string" },
      senderBankName: { type: "string" },
      amountMxn: { type: "number" },
      verification: { enum: verification },
      ...(verification.includes("HELD") ? { holdReason: { type: "string", description: "Why a HELD payment waits for an operator (a third-party payment)" } } : {}),
    },
  } as const;
}

/** The states of a report just taken. */
export const REPORT_TAKEN = ["PENDING", "VERIFIED"] as const;

/** A payment report's answer (report.ts PaymentReportResult), for the documents of the routes that report. */
export const paymentReportResultSchema = {
  type: "object",
  required: ["orderId", "status", "payment"],
  properties: { orderId: { type: "string" }, status: { enum: ORDER_STATUSES }, payment: paymentReportSchema(REPORT_TAKEN) },
} as const;
