import { ORDER_STATUSES } from "../orders/machine.ts";

/** A payment report's answer (report.ts PaymentReportResult), for the documents of the routes that report. */
export const paymentReportResultSchema = {
  type: "object",
  required: ["orderId", "status", "payment"],
  properties: {
    orderId: { type: "string" },
    status: { enum: ORDER_STATUSES },
    payment: {
      type: "object",
      required: ["trackingKey", "operationDate", "senderBankCode", "senderBankName", "amountMxn", "verification"],
      properties: {
        trackingKey: { type: "string" },
        operationDate: { type: "string", format: "date" },
        senderBankCode: { type: "string" },
        senderBankName: { type: "string" },
        amountMxn: { type: "number" },
        verification: { enum: ["PENDING", "VERIFIED"] },
      },
    },
  },
} as const;
