import type { Address, PublicClient } from "viem";
import { escrowAbi } from "../chain/escrow-abi.ts";
import { allAnswered, prepared, type Pool, type PoolClient } from "../db/pool.ts";
import { findParticipantByClabePrefix } from "../domain/spei-participants.ts";
import { CepQueryError, type CepLookupResult, type CepPortalClient } from "../integrations/cep-portal.ts";
import { verifyCepConcept, verifyCepReceipt, type CepReceipt } from "../integrations/cep-receipt.ts";
import type { Logger } from "../logger.ts";
import { comparePayer, normaliseTaxId } from "../domain/payer-identity.ts";
import { verifiedIdentity } from "./buyer-identity.ts";
import { paymentBeingVerified, reportInLockWindow, type OrderContext, type PaymentReportId, type ThirdPartyPayment } from "../orders/machine.ts";
import { getOrderRow } from "../orders/queries.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";

// Verification of a reported SPEI payment (decisions section 8), one attempt at a time. An attempt
// reads the order, asks the central bank's CEP portal for the receipt itself (never a file from the
// buyer), checks it, compares its ordering party with the buyer who locked (a third party's payment is
// verified but held for an operator), and ends in exactly one of: PAYMENT_VERIFIED, PAYMENT_REJECTED (the order stays
// LOCKED), the next attempt scheduled, or nothing (the report is no longer being verified). Whatever it
// ends in is committed in one transaction with the attempt's own completion (see src/workers/payment-verification.ts), so a
// crash repeats an attempt, never half of one.

/** Reasons of PAYMENT_REJECTED besides verifyCepReceipt's (BENEFICIARY_MISMATCH, AMOUNT_TOO_LOW, ...). */
export type PaymentRejectionReason =
  | "BENEFICIARY_MISMATCH"
  | "AMOUNT_TOO_LOW"
  | "DATE_OUTSIDE_LOCK_WINDOW"
  | "TRACKING_KEY_MISMATCH"
  | "CONCEPT_MISMATCH"
  | "CEP_ALREADY_USED"
  | "CEP_NOT_FOUND"
  | "LOCK_EXPIRED"
  | "INVALID_REPORT";

export interface VerificationPolicy {
  /** Waits between attempts after a transient answer, in seconds; the last one repeats. */
  retryDelaysSeconds: readonly number[];
  /** "Not found" answers in a row before the report is rejected with CEP_NOT_FOUND. */
  notFoundAttempts: number;
}

/**
 * Retried: "CEP not yet available", "too many queries" (Retry-After honoured when given) and outages,
 * until the lock expires. "Not found" is retried too, since a payment reaches the portal a little after
 * the buyer's bank shows it, but only for about a minute (6 answers): after that the report is most
 * likely wrong (key, date, bank, amount or account) and the buyer hears so while there is time to fix it.
 */
export const DEFAULT_VERIFICATION_POLICY: VerificationPolicy = {
  retryDelaysSeconds: [2, 4, 8, 15, 30, 60, 120, 300],
  notFoundAttempts: 6,
};

/** One attempt's job data: the report (as the verifyPayment effect enqueues it) and the attempt's history. */
export interface PaymentVerificationAttempt extends PaymentReportId {
  orderId: string;
  /** 1 for the first attempt (absent in the job the order machine enqueues). */
  attempt?: number;
  /** "Not found" answers so far. */
  notFound?: number;
  /** The portal's last answer, for the record when the lock expires first. */
  lastAnswer?: string;
}

export type AttemptOutcome =
  | { kind: "verified" }
  /** Verified, but paid by someone other than the buyer: held for an operator (decisions 8). */
  | { kind: "held"; comparedBy: string }
  | { kind: "rejected"; reason: PaymentRejectionReason; message: string }
  | { kind: "retry"; next: PaymentVerificationAttempt; startAfter: Date; answer: string }
  | { kind: "dropped"; why: string };

/** How an attempt's outcome is committed: by the job worker, with the attempt's own completion. */
export interface AttemptCommit {
  /** Runs `work` in the transaction that completes this attempt's job (rolled back if the attempt is no longer this worker's). */
  settle(work: (tx: PoolClient) => Promise<void>): Promise<void>;
  /** Enqueues the next attempt through `tx`. */
  scheduleNext(tx: PoolClient, next: PaymentVerificationAttempt, startAfter: Date): Promise<void>;
}

export interface PaymentVerifierDeps {
  pool: Pool;
  ports: OrderEffectPorts;
  portal: CepPortalClient;
  logger: Logger;
  /** The escrow's own record of used CEP hashes, checked besides the database's. */
  escrow?: { publicClient: PublicClient; address: Address };
  policy?: VerificationPolicy;
  now?: () => Date;
}

function describeAnswer(answer: CepLookupResult): string {
  switch (answer.kind) {
    case "unavailable":
      return `unavailable (${answer.reason})`;
    case "rate_limited":
      return answer.retryAfterSeconds === undefined ? "too many queries" : `too many queries (retry after ${answer.retryAfterSeconds} s)`;
    case "not_yet_available":
      return "payment found, CEP not yet available";
    case "not_found":
      return "no payment found";
    case "found":
      return "found";
  }
}

export function createPaymentVerifier(deps: PaymentVerifierDeps) {
  const { pool, ports, portal, logger } = deps;
  const policy = deps.policy ?? DEFAULT_VERIFICATION_POLICY;
  const now = deps.now ?? (() => new Date());

  const delayFor = (attempt: number) => policy.retryDelaysSeconds[Math.min(attempt - 1, policy.retryDelaysSeconds.length - 1)] ?? 60;

  async function usedOnChain(receipt: CepReceipt): Promise<boolean> {
    if (!deps.escrow) return false;
    return deps.escrow.publicClient.readContract({ address: deps.escrow.address, abi: escrowAbi, functionName: "cepHashUsed", args: [receipt.cepHash] });
  }

  /**
   * Who paid, when it is not the buyer who locked (decisions 8): the CEP's ordering party beside the
   * buyer's verified identity, for the operator's review; undefined when the payer is the buyer.
   */
  async function thirdPartyPayment(buyerWallet: string | null, receipt: CepReceipt): Promise<ThirdPartyPayment | undefined> {
    const buyer = await verifiedIdentity(pool, buyerWallet);
    const compared = comparePayer(buyer, { name: receipt.senderName, rfcOrCurp: receipt.senderRfc });
    if (compared.match) return undefined;
    return {
      payer: { name: receipt.senderName, rfcOrCurp: normaliseTaxId(receipt.senderRfc), account: receipt.senderAccount, bank: receipt.senderBank },
      buyer: { wallet: buyerWallet, ...buyer },
      comparedBy: compared.by,
    };
  }

  /** One attempt; `commit` writes its outcome with the job's completion. Returns what was committed (for the log). */
  async function attempt(job: PaymentVerificationAttempt, commit: AttemptCommit): Promise<AttemptOutcome> {
    const settle = commit.settle;
    const report: PaymentReportId = { cepTrackingKey: job.cepTrackingKey, operationDate: job.operationDate, senderBankCode: job.senderBankCode };
    const number = job.attempt ?? 1;
    const row = await getOrderRow(pool, null, job.orderId);
    const context = (row.machine_snapshot as { context: OrderContext }).context;
    const pending = row.status === "LOCKED" ? paymentBeingVerified(context, report) : undefined;
    const drop = async (why: string): Promise<AttemptOutcome> => {
      await settle(async () => undefined);
      return { kind: "dropped", why };
    };
    if (row.status !== "LOCKED") return drop(`the order is ${row.status}`);
    if (!pending) return drop("the report is no longer being verified");

    const reject = async (reason: PaymentRejectionReason, message: string): Promise<AttemptOutcome> => {
      await settle(async (tx) => {
        await applyOrderEvent(pool, ports, row.id, { type: "PAYMENT_REJECTED", ...report, reason, message, at: now().toISOString() }, { tx });
      });
      return { kind: "rejected", reason, message };
    };

    const lockExpiresAt = row.lock_expires_at!;
    // A payment made inside the window may still be verified, and released, during the escrow's refund
    // grace period after the lock's expiry (decisions 19), as long as the refund has not been asked for.
    const graceSeconds = reportInLockWindow(context, report) && !context.lockRefundRequested ? (context.refundGraceSeconds ?? 0) : 0;
    const deadline = new Date(lockExpiresAt.getTime() + graceSeconds * 1000);
    const ended = graceSeconds > 0 ? `the lock's refund grace period ended at ${deadline.toISOString()}` : `the lock expired at ${lockExpiresAt.toISOString()}`;
    if (now().getTime() >= deadline.getTime()) {
      return reject("LOCK_EXPIRED", `The CEP could not be verified before ${ended}` + (job.lastAnswer ? `; the central bank's portal last answered: ${job.lastAnswer}.` : "."));
    }
    const receiver = findParticipantByClabePrefix(row.seller_clabe.slice(0, 3));
    if (!receiver) return reject("INVALID_REPORT", `The seller's CLABE ${row.seller_clabe} has no SPEI participant`);

    let answer: CepLookupResult;
    try {
      answer = await portal.fetchCep({
        operationDate: report.operationDate,
        trackingKey: report.cepTrackingKey,
        senderBankCode: report.senderBankCode,
        receiverBankCode: receiver.code,
        beneficiaryAccount: row.seller_clabe,
        amountMxn: pending.amountMxn,
      });
    } catch (error) {
      if (error instanceof CepQueryError) return reject("INVALID_REPORT", `The report cannot be looked up: ${error.message}`);
      throw error;
    }
    logger.info({ orderId: row.id, trackingKey: report.cepTrackingKey, attempt: number, answer: describeAnswer(answer) }, "CEP portal answered");

    const retry = async (extra: Partial<PaymentVerificationAttempt>, minimumSeconds = 0): Promise<AttemptOutcome> => {
      const seconds = Math.max(delayFor(number), minimumSeconds);
      // Never past the deadline by more than a second: that attempt records the give-up promptly.
      const startAfter = new Date(Math.min(now().getTime() + seconds * 1000, deadline.getTime() + 1000));
      const next: PaymentVerificationAttempt = { ...job, ...extra, attempt: number + 1, lastAnswer: describeAnswer(answer) };
      await settle(async (tx) => {
        await commit.scheduleNext(tx, next, startAfter);
      });
      return { kind: "retry", next, startAfter, answer: describeAnswer(answer) };
    };

    switch (answer.kind) {
      case "not_yet_available":
      case "unavailable":
        return retry({});
      case "rate_limited":
        return retry({}, answer.retryAfterSeconds ?? 0);
      case "not_found": {
        const notFound = (job.notFound ?? 0) + 1;
        if (notFound < policy.notFoundAttempts) return retry({ notFound });
        return reject(
          "CEP_NOT_FOUND",
          `The central bank's CEP portal found no SPEI payment with tracking key ${report.cepTrackingKey} on ${report.operationDate} ` +
            `from participant ${report.senderBankCode} to the seller's CLABE ${row.seller_clabe} for ${pending.amountMxn} MXN (asked ${notFound} times). ` +
            "Check the report and send it again.",
        );
      }
      case "found":
        break;
    }

    const receipt = answer.receipt;
    const check = verifyCepReceipt(receipt, {
      sellerClabe: row.seller_clabe,
      totalMxn: row.total_mxn,
      trackingKey: report.cepTrackingKey,
      lockedAt: row.locked_at!,
      lockExpiresAt,
    });
    if (!check.ok) return reject(check.reason, check.message);
    if (await usedOnChain(receipt)) return reject("CEP_ALREADY_USED", "This payment's CEP has already been used to release an escrow order.");
    const thirdParty = await thirdPartyPayment(row.buyer_wallet, receipt);

    let outcome: AttemptOutcome = { kind: "verified" };
    await settle(async (tx) => {
      // Two orders verifying the same payment at once take turns here; the second sees the first's row.
      // orders.cep_hash is UNIQUE besides, so a CEP can settle one order whatever happens.
      // The check is sent behind the lock: PostgreSQL runs it once the lock is granted.
      const [, used] = await allAnswered([
        tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`cep:${receipt.cepHash}`]),
        tx.query(prepared("SELECT 1 FROM orders WHERE cep_hash = $1 AND id <> $2", [receipt.cepHash, row.id])),
      ]);
      const at = now();
      if (used.rowCount) {
        outcome = { kind: "rejected", reason: "CEP_ALREADY_USED", message: "This payment's CEP has already been used for another order." };
      } else if (at.getTime() >= deadline.getTime()) {
        outcome = { kind: "rejected", reason: "LOCK_EXPIRED", message: `The CEP was verified only after ${ended}.` };
      }
      // The concept ties the payment to this order (decisions 17); checked after the CEP's earlier use,
      // which says more about a payment reported for a second order.
      const concept = verifyCepConcept(receipt, row.payment_concept);
      if (outcome.kind !== "rejected" && !concept.ok) outcome = { kind: "rejected", reason: concept.reason, message: concept.message };
      if (outcome.kind === "rejected") {
        await applyOrderEvent(pool, ports, row.id, { type: "PAYMENT_REJECTED", ...report, reason: outcome.reason, message: outcome.message, at: at.toISOString() }, { tx });
        return;
      }
      const applied = await applyOrderEvent(
        pool,
        ports,
        row.id,
        {
          type: "PAYMENT_VERIFIED",
          ...report,
          cepHash: receipt.cepHash,
          amountMxn: receipt.amountMxn,
          paidAt: receipt.operationAt,
          at: at.toISOString(),
          ...(thirdParty ? { thirdParty } : {}),
        },
        { tx },
      );
      // The machine had moved on meanwhile (a dispute opened, the report ended): nothing was verified.
      if (!applied.changed) outcome = { kind: "dropped", why: `the order no longer takes this verdict (${applied.status})` };
      else if (thirdParty) outcome = { kind: "held", comparedBy: thirdParty.comparedBy };
    });
    return outcome;
  }

  return { attempt };
}

export type PaymentVerifier = ReturnType<typeof createPaymentVerifier>;
