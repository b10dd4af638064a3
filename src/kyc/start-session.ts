import type { Pool } from "../db/pool.ts";
import { KycSessionFailedError } from "../domain/errors.ts";
import type { KycLevel } from "../domain/kyc.ts";
import { KycProviderError, type KycProviderClient } from "../integrations/kyc-provider.ts";
import type { Logger } from "../logger.ts";
import { effectiveLimits, type Partner } from "../partners/partners.ts";
import { activateKycSession, failKycSession, reserveKycSession, type KycSessionRecord } from "./sessions.ts";

export interface StartKycSessionDeps {
  pool: Pool;
  provider: Pick<KycProviderClient, "createSession">;
  logger?: Logger;
}

export interface StartedKycSession {
  sessionId: string;
  sessionUrl: string;
  session: KycSessionRecord;
}

/**
 * Starts a hosted verification session for a user (POST /users/:ref/kyc, after the KYC model, input and
 * user checks): reserve a place under the monthly cap (KYC_LIMIT_REACHED), ask the provider for the
 * session (KYC_SESSION_FAILED when it fails or times out; the reservation is released, so a failed
 * attempt is neither counted nor billed), then record it as PENDING, billed or included, and set the
 * user PENDING.
 */
export async function startKycSession(
  deps: StartKycSessionDeps,
  input: { partner: Pick<Partner, "id" | "tier" | "limits">; userId: string; level: KycLevel; returnUrl: string },
): Promise<StartedKycSession> {
  const limits = effectiveLimits(input.partner);
  const reservation = await reserveKycSession(deps.pool, {
    partnerId: input.partner.id,
    userId: input.userId,
    level: input.level,
    returnUrl: input.returnUrl,
    capPerMonth: limits.kycCapPerMonth,
  });
  let created: { sessionId: string; sessionUrl: string };
  try {
    created = await deps.provider.createSession({ userId: input.userId, level: input.level, returnUrl: input.returnUrl });
  } catch (error) {
    const failure = error instanceof Error ? `${error.name}: ${error.message}` : "unknown error";
    await failKycSession(deps.pool, reservation, failure);
    if (!(error instanceof KycProviderError)) throw error;
    deps.logger?.warn({ err: error, kycSession: reservation.id }, "KYC provider could not create a session");
    throw new KycSessionFailedError(
      error.code === "TIMEOUT" ? "The KYC provider did not answer in time; no session was created" : "The KYC provider returned an error; no session was created",
    );
  }
  const session = await activateKycSession(deps.pool, reservation, {
    providerSessionId: created.sessionId,
    sessionUrl: created.sessionUrl,
    includedPerMonth: limits.kycIncludedPerMonth,
  });
  return { sessionId: created.sessionId, sessionUrl: created.sessionUrl, session };
}
