import type { Hex } from "viem";
import { recoverMessageSigner } from "../chain/secp256k1.ts";
import type { Pool } from "../db/pool.ts";
import { InvalidSignatureError, InvalidStateError, RateLimitedError, ValidationError } from "../domain/errors.ts";
import { money } from "../domain/money.ts";
import { findParticipantByClabePrefix, findParticipantByCode, type SpeiParticipant } from "../domain/spei-participants.ts";
import { paymentBeingVerified, type OrderContext, type OrderStatus, type PaymentReport } from "../orders/machine.ts";
import { getOrderRow } from "../orders/queries.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";

// The buyer's payment report (decisions section 8): tracking key, date, sending bank and the amount
// paid, signed by the wallet that locked the order. It is applied to the order as PAYMENT_REPORTED,
// whose effect enqueues the CEP verification (src/payments/verification.ts).

/** The first line of every payment report message. */
export const PAYMENT_REPORT_TITLE = "Offramp payment report";

/** A report as the buyer's client sends it (`POST /orders/:id/payment`). */
export interface PaymentReportInput {
  trackingKey: string;
  /** YYYY-MM-DD: the day the buyer paid (Mexico City). */
  operationDate: string;
  /** The sending bank: its 5-digit SPEI participant code ("40002") or its 3-digit CLABE prefix ("002"). */
  senderBankCode: string;
  /** What was paid; the order's totalMxn when absent. */
  amountMxn?: number;
  /** EIP-191 personal_sign of paymentReportMessage(...) by the order's buyer wallet (not needed when a market session proves the wallet). */
  signature?: string;
}

export interface PaymentReportMessageFields {
  escrowOrderId: string;
  trackingKey: string;
  operationDate: string;
  /** Exactly as sent in the report (a participant code or a CLABE prefix). */
  senderBankCode: string;
  /** Two decimals, e.g. "1725.00": the body's amountMxn, or the order's totalMxn when the body has none. */
  amountMxn: string;
}

/**
 * The text the buyer's wallet signs (EIP-191 personal_sign): six lines joined by "\n", no trailing
 * newline, each value exactly as sent in the report body except the amount, which is written with two
 * decimals (the order's totalMxn when the body leaves amountMxn out).
 *
 *   Offramp payment report
 *   order: 0x<escrowOrderId, as GET /orders/:id shows it>
 *   trackingKey: <trackingKey>
 *   operationDate: <YYYY-MM-DD>
 *   senderBank: <senderBankCode>
 *   amountMxn: <amount, e.g. 1725.00>
 */
export function paymentReportMessage(fields: PaymentReportMessageFields): string {
  return [
    PAYMENT_REPORT_TITLE,
    `order: ${fields.escrowOrderId}`,
    `trackingKey: ${fields.trackingKey}`,
    `operationDate: ${fields.operationDate}`,
    `senderBank: ${fields.senderBankCode}`,
    `amountMxn: ${fields.amountMxn}`,
  ].join("\n");
}

/** The sending bank from its participant code (4 or 5 digits) or its CLABE prefix (3 digits). */
export function resolveSenderBank(value: string): SpeiParticipant {
  const participant = /^\d{3}$/.test(value) ? findParticipantByClabePrefix(value) : /^\d{4,5}$/.test(value) ? findParticipantByCode(value) : undefined;
  if (!participant) {
    throw new ValidationError(`"senderBankCode" ${value} is not a SPEI participant: give its participant code (e.g. 40002) or its CLABE prefix (e.g. 002)`);
  }
  return participant;
}

/** An amount as the report's two-decimal text. */
export function reportAmount(value: number | string): string {
  return money(value).toFixed(2);
}

/**
 * Reports of one order under verification at once (decisions 17): each starts CEP portal lookups, so a
 * buyer (or a partner relaying one) cannot flood the verification with made-up reports. A 4th is
 * RATE_LIMITED until one of the three is decided.
 */
export const MAX_REPORTS_UNDER_VERIFICATION = 3;
/** Retry-After of a refused report: about the time a report found nowhere takes to be decided. */
const REPORT_RETRY_AFTER_SECONDS = 60;

function tooManyReports(): InstanceType<typeof RateLimitedError> {
  const error = new RateLimitedError(REPORT_RETRY_AFTER_SECONDS);
  error.message = `${MAX_REPORTS_UNDER_VERIFICATION} payment reports of this order are being verified; report again once one of them is decided`;
  return error;
}

export type PaymentVerificationState = "PENDING" | "VERIFIED";

export interface PaymentReportResult {
  orderId: string;
  status: OrderStatus;
  payment: {
    trackingKey: string;
    operationDate: string;
    senderBankCode: string;
    senderBankName: string;
    amountMxn: number;
    verification: PaymentVerificationState;
  };
}

interface SnapshotRow {
  status: OrderStatus;
  machine_snapshot: { context: OrderContext };
  cep_tracking_key: string | null;
}

/**
 * Checks and applies a payment report; the partner route, the market's payment route (`proof.buyerWallet`:
 * the session's wallet, instead of a signature) and the sandbox `pay` helper call it.
 * Checks, in order: the sending bank (VALIDATION_ERROR), the order (NOT_FOUND), that it has a buyer
 * (INVALID_STATE), the signature (INVALID_SIGNATURE), the cap of reports under verification
 * (RATE_LIMITED), then the machine decides. Idempotent: the same
 * payment reported again while it is being verified, or after it was verified, answers as the first
 * report did and starts nothing.
 */
export async function reportPayment(
  deps: { pool: Pool; ports: OrderEffectPorts },
  partnerId: string | null,
  orderId: string,
  input: PaymentReportInput,
  proof: { buyerWallet?: string } = {},
): Promise<PaymentReportResult> {
  const { pool, ports } = deps;
  const bank = resolveSenderBank(input.senderBankCode);
  const row = await getOrderRow(pool, partnerId, orderId);
  if (!row.buyer_wallet) throw new InvalidStateError(`The order is ${row.status}; a payment can be reported only once a buyer has locked it`);

  const amountMxn = reportAmount(input.amountMxn ?? row.total_mxn);
  const message = paymentReportMessage({
    escrowOrderId: row.escrow_order_id,
    trackingKey: input.trackingKey,
    operationDate: input.operationDate,
    senderBankCode: input.senderBankCode,
    amountMxn,
  });
  // The buyer's wallet is proven by its signature of the report, or by a market session of that wallet (decisions 17).
  const signer =
    proof.buyerWallet ?? (input.signature ? recoverMessageSigner(message, input.signature as Hex) : undefined);
  if (signer?.toLowerCase() !== row.buyer_wallet.toLowerCase()) {
    throw new InvalidSignatureError(
      signer
        ? `The report is signed by ${signer}, not by the buyer wallet ${row.buyer_wallet} that locked the order (or the signed text differs from the report)`
        : "The signature is not a valid EIP-191 signature of the payment report",
    );
  }

  const report: PaymentReport = { cepTrackingKey: input.trackingKey, operationDate: input.operationDate, senderBankCode: bank.code, amountMxn };
  const view = (status: OrderStatus, verification: PaymentVerificationState): PaymentReportResult => ({
    orderId: row.id,
    status,
    payment: {
      trackingKey: report.cepTrackingKey,
      operationDate: report.operationDate,
      senderBankCode: bank.code,
      senderBankName: bank.name,
      amountMxn: Number(amountMxn),
      verification,
    },
  });

  // Counted under the order's row lock (the transition's guard), so concurrent reports cannot pass the cap together.
  const applied = await applyOrderEvent(
    pool,
    ports,
    row.id,
    { type: "PAYMENT_REPORTED", ...report, at: new Date().toISOString() },
    {
      guard: ({ value: status, context }) => {
        const verifying = status === "LOCKED" ? (context.verifyingPayments ?? []) : [];
        if (verifying.length >= MAX_REPORTS_UNDER_VERIFICATION && !paymentBeingVerified(context, report)) throw tooManyReports();
      },
    },
  );
  if (applied.changed) return view(applied.status, "PENDING");

  // The machine changed nothing: a repeat of a report it already has, or the wrong state.
  const { rows } = await pool.query<SnapshotRow>("SELECT status, machine_snapshot, cep_tracking_key FROM orders WHERE id = $1", [row.id]);
  const current = rows[0]!;
  if (current.status === "LOCKED") {
    const pending = paymentBeingVerified(current.machine_snapshot.context, report);
    if (pending && pending.amountMxn === amountMxn) return view(current.status, "PENDING");
    if (pending) throw new InvalidStateError(`This payment is being verified with the amount ${pending.amountMxn} MXN; report it again once that verification ends`);
    if (current.machine_snapshot.context.cepHash) throw new InvalidStateError("A payment for this order was verified and is held for an operator's review; no other report is taken");
  }
  if ((current.status === "PENDING_RELEASE" || current.status === "COMPLETED") && current.cep_tracking_key?.toUpperCase() === report.cepTrackingKey.toUpperCase()) {
    const reported = await pool.query(
      `SELECT 1 FROM order_timeline WHERE order_id = $1 AND event = 'PAYMENT_REPORTED'
          AND upper(data->>'cepTrackingKey') = upper($2) AND data->>'operationDate' = $3 AND data->>'senderBankCode' = $4 AND data->>'amountMxn' = $5`,
      [row.id, report.cepTrackingKey, report.operationDate, report.senderBankCode, amountMxn],
    );
    if (reported.rowCount) return view(current.status, "VERIFIED");
  }
  throw new InvalidStateError(`The order is ${current.status}; a payment can be reported only while it is LOCKED`);
}
