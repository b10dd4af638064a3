import type { Pool } from "../db/pool.ts";
import { KycNotAvailableError, ValidationError } from "../domain/errors.ts";
import { KYC_LEVELS, type KycLevel } from "../domain/kyc.ts";
import type { KycProviderClient } from "../integrations/kyc-provider.ts";
import { startKycSession } from "./start-session.ts";
import type { Logger } from "../logger.ts";
import { getUserByRef } from "../users/users.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup, RouteSpec } from "../http/routes.ts";
import { bodyValidator } from "../http/schema.ts";

interface KycSessionBody {
  level: KycLevel;
  returnUrl: string;
}

export const kycSessionBodySchema = {
  type: "object",
  additionalProperties: false,
  required: ["level", "returnUrl"],
  properties: {
    level: { enum: KYC_LEVELS },
    returnUrl: { type: "string", minLength: 1, maxLength: 2048, description: "absolute https URL (http allowed in sandbox)" },
  },
} as const;

const validateBody = bodyValidator<KycSessionBody>(kycSessionBodySchema);

/** `returnUrl` must be an absolute https URL; http is allowed in sandbox (decisions section 4). */
export function checkReturnUrl(value: string, sandbox: boolean): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError('"returnUrl" must be an absolute URL');
  }
  const allowed = sandbox ? ["https:", "http:"] : ["https:"];
  if (!allowed.includes(url.protocol)) {
    throw new ValidationError(sandbox ? '"returnUrl" must be an http or https URL' : '"returnUrl" must be an https URL');
  }
  if (url.username || url.password) throw new ValidationError('"returnUrl" must not carry credentials');
}

export function kycRoutes(api: RouteGroup, deps: { pool: Pool; provider: Pick<KycProviderClient, "createSession">; sandbox: boolean; logger?: Logger }): void {
  const { pool } = deps;

  // The body schema is checked in the handler, after the KYC model: the spec lists KYC_NOT_AVAILABLE
  // before VALIDATION_ERROR. It is attached to the spec after registration, for the OpenAPI document only.
  const spec: RouteSpec = {
    method: "post",
    path: "/users/:ref/kyc",
    tag: "Users",
    summary: "Start a KYC session for a user (service-provided KYC)",
    description:
      "Redirect the user to `sessionUrl`; after verification the provider sends the user to `returnUrl`. Starting a session sets the user's `kycStatus` to PENDING until the provider decides. Sessions within the tier's monthly allocation are free; later ones are billed (BASIC 1.00 USD, FULL 2.50 USD) up to the monthly cap.",
    idempotent: true,
    responses: {
      201: {
        description: "Session created",
        schema: { type: "object", properties: { sessionId: { type: "string" }, sessionUrl: { type: "string", format: "uri" } } },
      },
    },
    errors: ["KYC_NOT_AVAILABLE", "VALIDATION_ERROR", "NOT_FOUND", "KYC_LIMIT_REACHED", "KYC_SESSION_FAILED"],
  };
  api.add(spec, async (ctx, { params }) => {
    const partner = currentPartner(ctx);
    if (partner.kycModel !== "SERVICE_PROVIDED") {
      throw new KycNotAvailableError("The partner uses PARTNER_MANAGED KYC: attest levels with POST /users/:ref/kyc-attestation");
    }
    const body = validateBody(ctx.request.body ?? {});
    checkReturnUrl(body.returnUrl, deps.sandbox);
    const user = await getUserByRef(pool, partner.id, params.ref!);
    const started = await startKycSession(
      { pool, provider: deps.provider, ...(deps.logger ? { logger: deps.logger } : {}) },
      { partner, userId: user.id, level: body.level, returnUrl: body.returnUrl },
    );
    ctx.status = 201;
    ctx.body = { sessionId: started.sessionId, sessionUrl: started.sessionUrl };
  });
  spec.body = kycSessionBodySchema;
}
