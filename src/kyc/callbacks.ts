import type { Pool, PoolClient } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import type { KycDecision } from "../integrations/kyc-provider.ts";
import { approveKyc, rejectKyc, setScreening } from "../users/users.ts";
import { findKycSessionByProviderId, kycSessionFromRow, type KycSessionRecord, type KycSessionRow } from "./sessions.ts";

/**
 * - `decided`: the session's decision was applied to the user now.
 * - `already-decided`: the session had its decision already (a replay or a late second decision): nothing changed.
 * - `screening`: PEP / sanctions flags recorded, no decision.
 * - `not-final`: the provider reported a non-final state (review, resubmission); only flags recorded.
 */
export type KycCallbackOutcome = "decided" | "already-decided" | "screening" | "not-final";

/** Sessions of the same provider that are not partners' users' (a market buyer's): applied by their owner, or undefined when unknown. */
export type OtherKycSession = (tx: PoolClient, decision: KycDecision) => Promise<{ outcome: KycCallbackOutcome; sessionId: string } | undefined>;

/**
 * Applies a verified provider callback (decisions section 4), in one transaction with the session row
 * locked, so concurrent deliveries of the same callback apply once:
 * APPROVED -> the user is APPROVED, tier = the highest level ever approved, `kycCompletedAt` = that approval;
 * REJECTED -> REJECTED, tier and `kycCompletedAt` kept. The level is the one the session was started and
 * billed for. PEP / sanctions matches are raised on the session and the user. A session's first final
 * decision is the only one applied. Unknown session: NOT_FOUND, nothing changes.
 */
export async function applyKycCallback(pool: Pool, decision: KycDecision, otherSession: OtherKycSession): Promise<{ outcome: KycCallbackOutcome; session: Pick<KycSessionRecord, "id"> }> {
  return withTransaction(pool, async (tx) => {
    const session = await findKycSessionByProviderId(tx, decision.sessionId, true);
    if (!session) {
      // Not a partner's user: a market buyer's session (same provider, decisions 17), or unknown.
      const buyer = await otherSession(tx, decision);
      if (buyer) return { outcome: buyer.outcome, session: { id: buyer.sessionId } };
      throw new NotFoundError("No KYC session with this id");
    }
    const final = decision.kind === "decision" && decision.result !== "PENDING";
    if (final && (session.status === "APPROVED" || session.status === "REJECTED")) {
      return { outcome: "already-decided" as const, session };
    }

    const flags = { isPep: decision.isPep, isSanctioned: decision.isSanctioned };
    await setScreening(tx, session.userId, flags);
    let outcome: KycCallbackOutcome = decision.kind === "screening" ? "screening" : "not-final";
    let status = session.status;
    if (final) {
      status = decision.result === "APPROVED" ? "APPROVED" : "REJECTED";
      outcome = "decided";
      if (status === "APPROVED") await approveKyc(tx, session.userId, session.level, decision.decidedAt);
      else await rejectKyc(tx, session.userId);
    }
    const { rows } = await tx.query<KycSessionRow>(
      `UPDATE kyc_sessions SET status = $2, is_pep = is_pep OR $3, is_sanctioned = is_sanctioned OR $4,
              decided_at = CASE WHEN $5 THEN $6::timestamptz ELSE decided_at END,
              decision_reason = CASE WHEN $5 THEN $7 ELSE decision_reason END, updated_at = now()
        WHERE id = $1 RETURNING *`,
      [session.id, status, flags.isPep, flags.isSanctioned, final, decision.decidedAt, decision.reason ?? null],
    );
    return { outcome, session: kycSessionFromRow(rows[0]!) };
  });
}
