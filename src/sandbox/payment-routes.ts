import { hashMessage, hexToBytes, type Hex } from "viem";
import { signDigest } from "../chain/secp256k1.ts";
import { sandboxAccounts } from "../stack/local-node.ts";
import type { Pool, Queryable } from "../db/pool.ts";
import { parseClabe, withCheckDigit } from "../domain/clabe.ts";
import { InvalidStateError } from "../domain/errors.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { mexicoCityDateTime } from "../integrations/cep-receipt.ts";
import { getOrderRow, type OrderRow } from "../orders/queries.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { verifiedIdentity } from "../payments/buyer-identity.ts";
import { paymentReportMessage, reportAmount, reportPayment, resolveSenderBank } from "../payments/report.ts";
import type { CepPortalSimulator } from "./simulators/cep-portal.ts";
import { paymentReportResultSchema } from "../payments/report-schema.ts";

/** The sending bank of simulated payments: STP, where many payment apps hold their users' accounts. */
export const SANDBOX_SENDER_BANK_CODE = "90646";
/** The buyer's simulated account at that bank. */
const SANDBOX_SENDER_ACCOUNT = withCheckDigit("64618015700000000");

interface PayBody {
  amountMxn?: number;
  clabe?: string;
  paidAt?: string;
  senderBankCode?: string;
  concept?: string;
  payerName?: string;
  payerRfc?: string;
}

/** The body fields of a simulated SPEI payment, shared by the partner `pay` helper and the market's `spei` helper. */
export const simulatedPaymentProperties = {
  amountMxn: { type: "number", exclusiveMinimum: 0, maximum: 1_000_000_000, "x-maxDecimals": 2 },
  clabe: { type: "string", maxLength: 64 },
  paidAt: { type: "string", format: "date-time" },
  senderBankCode: { type: "string", pattern: "^\\d{3,5}$" },
  concept: { type: "string", maxLength: 40, description: "The SPEI concept; default the order's payment concept, \"\" for none" },
  payerName: { type: "string", minLength: 1, maxLength: 120, description: "The ordering party's name on the CEP; default the buyer's verified name" },
  payerRfc: {
    type: "string",
    pattern: "^[A-Za-z0-9&Ññ]{1,18}$",
    description: "The ordering party's RFC or CURP on the CEP; default the buyer's verified RFC (or CURP); with another payerName and none given, \"ND\"",
  },
} as const;

/**
 * Who the transfer is sent as (decisions 17): the buyer's own verified identity unless the body names
 * another payer, which simulates a third-party payment (decisions 8).
 */
async function payerOf(db: Queryable, buyerWallet: string | null, body: Pick<PayBody, "payerName" | "payerRfc">): Promise<{ name: string; rfc: string }> {
  const own = await verifiedIdentity(db, buyerWallet);
  const name = body.payerName ?? own.name ?? "COMPRADOR SANDBOX";
  const rfc = body.payerRfc ?? (body.payerName === undefined ? (own.rfc ?? own.curp) : undefined) ?? "ND";
  return { name, rfc: rfc.toUpperCase() };
}

/**
 * A buyer's SPEI transfer recorded in the CEP portal simulator (which will then issue its CEP): to the
 * seller's CLABE for totalMxn with the order's payment concept, unless the body changes them so that
 * mismatches can be tried. Reports nothing.
 */
export async function simulateSpeiPayment(db: Queryable, simulator: CepPortalSimulator, row: OrderRow, body: PayBody) {
  const beneficiary = parseClabe(body.clabe ?? row.seller_clabe);
  const senderBankCode = body.senderBankCode ?? SANDBOX_SENDER_BANK_CODE;
  const sender = resolveSenderBank(senderBankCode);
  // Now, or the lock's instant if later: the local chain's block clock runs ahead of the wall clock
  // when blocks come faster than one a second, and a payment cannot precede its lock.
  const paidAt = body.paidAt ? new Date(body.paidAt) : new Date(Math.max(Date.now(), row.locked_at?.getTime() ?? 0));
  const amountMxn = reportAmount(body.amountMxn ?? row.total_mxn);
  const concept = body.concept ?? row.payment_concept;
  const payer = await payerOf(db, row.buyer_wallet, body);
  const { trackingKey } = simulator.recordPayment({
    operationAt: paidAt,
    amountMxn,
    beneficiaryAccount: beneficiary.clabe,
    receiverBankCode: beneficiary.participant.code,
    senderBankCode: sender.code,
    senderAccount: SANDBOX_SENDER_ACCOUNT,
    senderName: payer.name,
    senderRfc: payer.rfc,
    beneficiaryName: "VENDEDOR SANDBOX",
    concept,
  });
  await simulator.flush(); // shared with the other instances before any of them verifies it
  return { trackingKey, operationDate: mexicoCityDateTime(paidAt).date, paidAt, amountMxn, senderBankCode, sender, beneficiary, concept };
}

/**
 * `POST /sandbox/orders/:id/pay` (decisions section 13): the buyer's SPEI payment is recorded in the
 * CEP portal simulator (so the portal will issue its CEP), then reported exactly as a buyer's client
 * would: the report message signed with the buyer's sandbox wallet key and handed to the same
 * reportPayment as `POST /orders/:id/payment`. Verification then runs as in production, against the
 * portal at CEP_URL (the built-in simulator unless CEP_URL points elsewhere).
 */
export function sandboxPaymentRoutes(api: RouteGroup, deps: { pool: Pool; ports: OrderEffectPorts; simulator: CepPortalSimulator }): void {
  const { pool, simulator } = deps;
  api.add<PayBody>(
    {
      method: "post",
      path: "/sandbox/orders/:id/pay",
      tag: "Sandbox",
      summary: "Simulates the buyer's SPEI payment and reports it, signed by the buyer's sandbox wallet",
      description:
        "Optional `amountMxn` (default totalMxn), `clabe` (default the seller's), `paidAt` (ISO 8601 instant, default now or the lock's time if later) and " +
        "`senderBankCode` (default 90646, STP) and `concept` (default the order's payment concept, \"\" for none) let mismatches be tried; " +
        "`payerName` and `payerRfc` (default the buyer's own verified identity) simulate a payment from someone else's account, which is held for review. " +
        "Reports for whichever wallet locked the order. Answers the report's result with the payment's `trackingKey`.",
      body: { type: "object", additionalProperties: false, properties: simulatedPaymentProperties },
      responses: {
        200: {
          description: "{ trackingKey, operationDate, paidAt, amountMxn, beneficiaryAccount, senderBankCode, concept, signature, orderId, status, payment }",
          schema: {
            ...paymentReportResultSchema,
            required: [...paymentReportResultSchema.required, "trackingKey", "operationDate", "paidAt", "amountMxn", "beneficiaryAccount", "senderBankCode", "concept", "signature"],
            properties: {
              ...paymentReportResultSchema.properties,
              trackingKey: { type: "string" },
              operationDate: { type: "string", format: "date" },
              paidAt: { type: "string", format: "date-time" },
              amountMxn: { type: "number" },
              beneficiaryAccount: { type: "string" },
              senderBankCode: { type: "string" },
              concept: { type: "string" },
              signature: { type: ["string", "null"] },
            },
          },
        },
      },
      errors: ["VALIDATION_ERROR", "INVALID_CLABE", "NOT_FOUND", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const partnerId = currentPartner(ctx).id;
      const row = await getOrderRow(pool, partnerId, params.id!);
      if (row.status !== "LOCKED") throw new InvalidStateError(`The order is ${row.status}; this action needs LOCKED`);
      const { trackingKey, operationDate, paidAt, amountMxn, senderBankCode, sender, beneficiary, concept } = await simulateSpeiPayment(pool, simulator, row, body);
      // Reported for whichever wallet locked the order: signed with a sandbox wallet's key, or, for a
      // market buyer's wallet, with that wallet as proof, as its market session would.
      const buyer = sandboxAccounts.find((account) => account.address.toLowerCase() === row.buyer_wallet?.toLowerCase());
      const message = paymentReportMessage({ escrowOrderId: row.escrow_order_id, trackingKey, operationDate, senderBankCode, amountMxn });
      const signature: Hex | null = buyer ? signDigest(hashMessage(message), hexToBytes(buyer.privateKey)) : null;
      const result = await reportPayment(
        deps,
        partnerId,
        row.id,
        { trackingKey, operationDate, senderBankCode, amountMxn: Number(amountMxn), ...(signature ? { signature } : {}) },
        signature ? {} : { buyerWallet: row.buyer_wallet ?? "" },
      );
      ctx.body = {
        trackingKey,
        operationDate,
        paidAt: paidAt.toISOString(),
        amountMxn: Number(amountMxn),
        beneficiaryAccount: beneficiary.clabe,
        senderBankCode: sender.code,
        concept,
        signature,
        ...result,
      };
    },
  );
}
