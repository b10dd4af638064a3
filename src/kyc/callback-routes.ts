import type Router from "@koa/router";
import type { Pool } from "../db/pool.ts";
import { UnauthorizedError, ValidationError } from "../domain/errors.ts";
import { KycCallbackPayloadError, KycCallbackSignatureError, type KycProviderClient } from "../integrations/kyc-provider.ts";
import { applyKycCallback, type OtherKycSession } from "./callbacks.ts";

export type { OtherKycSession };
import type { Logger } from "../logger.ts";
import type { AppState } from "../http/context.ts";
import { jsonBody } from "../http/middleware/json-body.ts";
import type { RateLimits } from "../http/middleware/rate-limit.ts";
import { limitRefusals } from "../http/middleware/surface-limits.ts";
import { createRouter } from "../http/router.ts";

/** Where the KYC provider posts its signed decision and screening webhooks (outside /api/v1, no API key). */
export const KYC_CALLBACK_PATH = "/callbacks/kyc";

/**
 * The provider's callback. The signature is checked over the raw request bytes: the app's JSON body
 * parser keeps them as `ctx.request.rawBody`, decoded as UTF-8, and re-encoding gives back the exact bytes
 * for every valid UTF-8 body. Anything the decoding would alter (invalid UTF-8, a byte-order mark, a
 * compressed body) makes the signature fail, so it is refused, never accepted. Unsigned or wrongly signed:
 * 401 UNAUTHORIZED; signed but not a decision or screening payload: 400 VALIDATION_ERROR; unknown session:
 * 404 NOT_FOUND. In each case nothing changes. A replayed callback answers 200 and changes nothing.
 * Refused callbacks from one address past ADDRESS_REQUESTS_PER_MINUTE a minute answer 429 RATE_LIMITED.
 */
export function kycCallbackRouter(deps: {
  pool: Pool;
  provider: Pick<KycProviderClient, "verifyDecisionCallback">;
  otherSession: OtherKycSession;
  rateLimits: RateLimits;
  logger?: Logger;
}): Router<AppState> {
  const router = createRouter();
  // Signed callbacks are never limited (the provider's bursts must get through); unsigned ones are counted per address.
  router.post(KYC_CALLBACK_PATH, limitRefusals(deps.rateLimits, "kyc-callback"), jsonBody(), async (ctx) => {
    const rawBody = (ctx.request as { rawBody?: unknown }).rawBody;
    const raw = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.alloc(0);
    let decision;
    try {
      decision = deps.provider.verifyDecisionCallback(raw, ctx.headers);
    } catch (error) {
      if (error instanceof KycCallbackSignatureError) {
        ctx.state.log.warn({ reason: error.message }, "KYC callback refused");
        throw new UnauthorizedError(`The KYC callback is refused: ${error.message}`);
      }
      if (error instanceof KycCallbackPayloadError) throw new ValidationError(`The KYC callback is not understood: ${error.message}`);
      throw error;
    }
    const { outcome, session } = await applyKycCallback(deps.pool, decision, deps.otherSession);
    ctx.state.log.info({ kycSession: session.id, providerSessionId: decision.sessionId, kind: decision.kind, result: decision.result, outcome }, "KYC callback");
    ctx.body = { received: true, outcome };
  });
  return router;
}
