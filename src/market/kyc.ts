import type { Pool, PoolClient } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { KycSessionFailedError, RateLimitedError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import type { KycLevel } from "../domain/kyc.ts";
import { KycProviderError, type KycDecision, type KycProviderClient } from "../integrations/kyc-provider.ts";
import type { Logger } from "../logger.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";
import { normaliseWallet } from "./buyers.ts";

// Buyer KYC (decisions 17): the same provider and rules as partners' users (decisions 4), on the
// buyer's row: starting a session sets PENDING, the provider's decision APPROVED (tier = the highest
// level ever approved) or REJECTED. The provider's signed callback reaches the one callback route;
// sessions it does not find among partners' users are looked up here (src/kyc/callbacks.ts).

/**
 * Provider sessions a buyer may start in 24 hours (decisions 17): each is a paid session at the provider.
 * Sessions the provider failed to create (FAILED) cost nothing and do not count.
 */
export const BUYER_KYC_SESSIONS_PER_DAY = 3;

function kycSessionsExhausted(oldestCounted: Date): InstanceType<typeof RateLimitedError> {
  const retryAfter = Math.max(1, Math.ceil((oldestCounted.getTime() + 86_400_000 - Date.now()) / 1000));
  const error = new RateLimitedError(retryAfter);
  error.message = `A buyer starts at most ${BUYER_KYC_SESSIONS_PER_DAY} KYC sessions a day; retry after ${retryAfter} s`;
  return error;
}

/** Starts a hosted session for the buyer; KYC_SESSION_FAILED when the provider fails (nothing recorded as pending); RATE_LIMITED past the daily cap. */
export async function startBuyerKycSession(
  deps: { pool: Pool; provider: Pick<KycProviderClient, "createSession">; logger?: Logger },
  input: { wallet: string; level: KycLevel; returnUrl: string },
): Promise<{ sessionId: string; sessionUrl: string }> {
  const wallet = normaliseWallet(input.wallet);
  const id = newId("kyc");
  await withTransaction(deps.pool, async (tx) => {
    // Counted and recorded under a per-buyer lock, so concurrent requests cannot pass the cap together.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('buyer-kyc:' || $1))", [wallet]);
    const { rows } = await tx.query<{ oldest: Date }>(
      `SELECT created_at AS oldest FROM buyer_kyc_sessions WHERE wallet = $1 AND status <> 'FAILED' AND created_at > now() - interval '1 day'
        ORDER BY created_at DESC OFFSET $2 - 1 LIMIT 1`,
      [wallet, BUYER_KYC_SESSIONS_PER_DAY],
    );
    if (rows[0]) throw kycSessionsExhausted(rows[0].oldest);
    await tx.query("INSERT INTO buyer_kyc_sessions (id, wallet, level, status, return_url) VALUES ($1, $2, $3, 'CREATING', $4)", [id, wallet, input.level, input.returnUrl]);
  });
  let created: { sessionId: string; sessionUrl: string };
  try {
    created = await deps.provider.createSession({ userId: wallet, level: input.level, returnUrl: input.returnUrl });
  } catch (error) {
    const failure = error instanceof Error ? `${error.name}: ${error.message}` : "unknown error";
    await deps.pool.query("UPDATE buyer_kyc_sessions SET status = 'FAILED', failure = $2, updated_at = now() WHERE id = $1", [id, failure]);
    if (!(error instanceof KycProviderError)) throw error;
    deps.logger?.warn({ err: error, kycSession: id }, "KYC provider could not create a buyer session");
    throw new KycSessionFailedError(error.code === "TIMEOUT" ? "The KYC provider did not answer in time; no session was created" : "The KYC provider returned an error; no session was created");
  }
  await withTransaction(deps.pool, async (tx) => {
    await tx.query("UPDATE buyer_kyc_sessions SET status = 'PENDING', provider_session_id = $2, session_url = $3, updated_at = now() WHERE id = $1", [
      id,
      created.sessionId,
      created.sessionUrl,
    ]);
    await tx.query("UPDATE buyers SET kyc_status = 'PENDING', updated_at = now() WHERE wallet = $1", [wallet]);
  });
  return created;
}

/** Whether a provider session is one of this buyer's. */
export async function isBuyerKycSession(db: Pick<Pool, "query">, wallet: string, providerSessionId: string): Promise<boolean> {
  const { rowCount } = await db.query("SELECT 1 FROM buyer_kyc_sessions WHERE provider_session_id = $1 AND wallet = $2", [providerSessionId, normaliseWallet(wallet)]);
  return Boolean(rowCount);
}

/**
 * Applies a verified provider callback to a buyer's session, inside the callback's transaction, with the
 * session row locked. Undefined when the session is not a buyer's. A session's first final decision is
 * the only one applied; screening flags are only raised.
 */
export async function applyBuyerKycCallback(
  tx: PoolClient,
  decision: KycDecision,
  orders: { pool: Pool; ports: OrderEffectPorts },
): Promise<{ outcome: "decided" | "already-decided" | "screening" | "not-final"; sessionId: string } | undefined> {
  const { rows } = await tx.query<{ id: string; wallet: string; level: KycLevel; status: string }>(
    "SELECT id, wallet, level, status FROM buyer_kyc_sessions WHERE provider_session_id = $1 FOR UPDATE",
    [decision.sessionId],
  );
  const session = rows[0];
  if (!session) return undefined;
  const final = decision.kind === "decision" && decision.result !== "PENDING";
  if (final && (session.status === "APPROVED" || session.status === "REJECTED")) return { outcome: "already-decided", sessionId: session.id };
  // Flags are only raised. A buyer newly flagged is stopped as a listed wallet is (decisions 19): the
  // permit route refuses it, and its open locks are held for the operator's review.
  const flagged = await tx.query(
    "UPDATE buyers SET is_pep = is_pep OR $2, is_sanctioned = is_sanctioned OR $3, updated_at = now() WHERE wallet = $1 AND ((NOT is_pep AND $2) OR (NOT is_sanctioned AND $3))",
    [session.wallet, decision.isPep, decision.isSanctioned],
  );
  if (flagged.rowCount) await holdOpenLocks(tx, orders, session.wallet, decision.isSanctioned ? "KYC_SANCTIONS_MATCH" : "KYC_PEP_MATCH", decision.decidedAt);
  let status = session.status;
  if (final) {
    status = decision.result === "APPROVED" ? "APPROVED" : "REJECTED";
    if (status === "APPROVED") {
      const rank = session.level === "FULL" ? 2 : 1;
      await tx.query(
        `UPDATE buyers SET kyc_status = 'APPROVED',
           kyc_tier = CASE WHEN $2 > (CASE kyc_tier WHEN 'FULL' THEN 2 WHEN 'BASIC' THEN 1 ELSE 0 END) THEN $3 ELSE kyc_tier END,
           kyc_completed_at = CASE WHEN $2 > (CASE kyc_tier WHEN 'FULL' THEN 2 WHEN 'BASIC' THEN 1 ELSE 0 END) THEN $4 ELSE kyc_completed_at END,
           verified_name = coalesce($5, verified_name), verified_curp = coalesce($6, verified_curp), verified_rfc = coalesce($7, verified_rfc),
           updated_at = now()
         WHERE wallet = $1`,
        [session.wallet, rank, session.level, decision.decidedAt, decision.identity?.name ?? null, decision.identity?.curp ?? null, decision.identity?.rfc ?? null],
      );
    } else {
      await tx.query("UPDATE buyers SET kyc_status = 'REJECTED', updated_at = now() WHERE wallet = $1", [session.wallet]);
    }
  }
  await tx.query(
    `UPDATE buyer_kyc_sessions SET status = $2, is_pep = is_pep OR $3, is_sanctioned = is_sanctioned OR $4,
            decided_at = CASE WHEN $5 THEN $6::timestamptz ELSE decided_at END,
            decision_reason = CASE WHEN $5 THEN $7 ELSE decision_reason END, updated_at = now()
      WHERE id = $1`,
    [session.id, status, decision.isPep, decision.isSanctioned, final, decision.decidedAt, decision.reason ?? null],
  );
  return { outcome: final ? "decided" : decision.kind === "screening" ? "screening" : "not-final", sessionId: session.id };
}

/** The buyer's orders that hold a lock and can still be held: LOCKED or DISPUTED (no release sent yet). */
async function holdOpenLocks(tx: PoolClient, orders: { pool: Pool; ports: OrderEffectPorts }, wallet: string, match: string, at: Date): Promise<void> {
  const { rows } = await tx.query<{ id: string }>("SELECT id FROM orders WHERE lower(buyer_wallet) = $1 AND status IN ('LOCKED', 'DISPUTED') ORDER BY id", [wallet]);
  for (const row of rows) {
    await applyOrderEvent(orders.pool, orders.ports, row.id, { type: "BUYER_SANCTIONED", listEntry: match, at: at.toISOString() }, { tx });
  }
}
