import type { Pool } from "../db/pool.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { reportPayment, type PaymentReportInput } from "./report.ts";
import { paymentReportResultSchema } from "./report-schema.ts";

/** The report body's schema, shared by the partner route and the OpenAPI document. */
export const paymentReportBody = {
  type: "object",
  additionalProperties: false,
  required: ["trackingKey", "operationDate", "senderBankCode", "signature"],
  properties: {
    trackingKey: { type: "string", pattern: "^[A-Za-z0-9]{1,30}$", description: "SPEI clave de rastreo, 1 to 30 letters or digits" },
    operationDate: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$", format: "date", description: "The day the buyer paid (Mexico City), YYYY-MM-DD" },
    senderBankCode: { type: "string", pattern: "^\\d{3,5}$", description: "Sending bank: 5-digit SPEI participant code (40002) or 3-digit CLABE prefix (002)" },
    amountMxn: { type: "number", exclusiveMinimum: 0, maximum: 1_000_000_000, "x-maxDecimals": 2, description: "Amount paid; default the order's totalMxn" },
    signature: { type: "string", pattern: "^0x[0-9a-fA-F]{130}$", description: "EIP-191 personal_sign of the payment report message by the buyer wallet" },
  },
} as const;

export function paymentRoutes(api: RouteGroup, deps: { pool: Pool; ports: OrderEffectPorts }): void {
  api.add<PaymentReportInput>(
    {
      method: "post",
      path: "/orders/:id/payment",
      tag: "Orders",
      summary: "Report the buyer's SPEI payment (signed by the buyer's wallet)",
      description:
        "The buyer paid totalMxn to the seller's CLABE by SPEI; the partner relays the buyer's report. `signature` is the buyer wallet's " +
        "EIP-191 personal_sign of the six lines `Offramp payment report`, `order: <escrowOrderId>`, `trackingKey: <trackingKey>`, " +
        "`operationDate: <operationDate>`, `senderBank: <senderBankCode>`, `amountMxn: <amount with 2 decimals>` joined by \\n " +
        "(values as sent; the amount is the order's totalMxn when amountMxn is left out). The service then fetches the CEP from the " +
        "central bank itself and checks it; the result shows on the order (PAYMENT_VERIFIED then PENDING_RELEASE, or a PAYMENT_REJECTED " +
        "timeline entry while the order stays LOCKED). Reporting the same payment again starts nothing new. Checks, in order: " +
        "VALIDATION_ERROR, NOT_FOUND, INVALID_STATE (no buyer yet), INVALID_SIGNATURE, RATE_LIMITED (3 reports of the order already being " +
        "verified: report again once one is decided), INVALID_STATE (not LOCKED).",
      idempotent: true,
      body: paymentReportBody,
      responses: { 202: { description: "Report accepted: { orderId, status, payment: { trackingKey, operationDate, senderBankCode, senderBankName, amountMxn, verification } }", schema: paymentReportResultSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "INVALID_SIGNATURE", "RATE_LIMITED"],
    },
    async (ctx, { body, params }) => {
      ctx.status = 202;
      ctx.body = await reportPayment(deps, currentPartner(ctx).id, params.id!, body);
    },
  );
}
