import type { Pool } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { KycNotAvailableError, ValidationError } from "../domain/errors.ts";
import { KYC_LEVELS, type KycLevel } from "../domain/kyc.ts";
import { effectiveLimits } from "../partners/partners.ts";
import { approveKyc, createUser, getUserByRef, userCreateView, userDetailView, userVolumes } from "./users.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { isoTimestamp } from "../http/schema.ts";

const partnerUserRef = { type: "string", minLength: 1, maxLength: 255 } as const;
const attestationSchema = {
  type: "object",
  additionalProperties: false,
  required: ["level", "verifiedAt"],
  properties: { level: { enum: KYC_LEVELS }, verifiedAt: isoTimestamp },
} as const;

const userCreateSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    partnerUserRef: { type: "string" },
    kycStatus: { enum: ["NOT_REQUIRED", "PENDING", "APPROVED", "REJECTED"] },
    kycTier: { enum: ["NONE", "BASIC", "FULL"] },
    orderCount: { type: "integer" },
    totalVolumeMxn: { type: "number" },
    createdAt: isoTimestamp,
  },
} as const;
export const userDetailSchema = {
  type: "object",
  properties: {
    ...userCreateSchema.properties,
    kycCompletedAt: { type: ["string", "null"], format: "date-time" },
    monthlyVolumeMxn: { type: "number" },
    amlRiskLevel: { enum: ["LOW", "MEDIUM", "HIGH", null] },
    isPep: { type: "boolean" },
    isSanctioned: { type: "boolean" },
    updatedAt: isoTimestamp,
  },
} as const;

interface Attestation {
  level: KycLevel;
  verifiedAt: string;
}

/** An attestation cannot claim a verification in the future. */
function attestedAt(attestation: Attestation): Date {
  const at = new Date(attestation.verifiedAt);
  if (at.getTime() > Date.now() + 60_000) throw new ValidationError('"kycAttestation.verifiedAt" must not be in the future');
  return at;
}

export function userRoutes(api: RouteGroup, deps: { pool: Pool }): void {
  const { pool } = deps;

  api.add<{ partnerUserRef: string; email?: string; kycAttestation?: Attestation }>(
    {
      method: "post",
      path: "/users",
      tag: "Users",
      summary: "Register a user",
      description: "A user must be registered before quotes or orders are created for it. `kycAttestation` is for PARTNER_MANAGED partners only.",
      idempotent: true,
      body: {
        type: "object",
        additionalProperties: false,
        required: ["partnerUserRef"],
        properties: { partnerUserRef, email: { type: "string", format: "email", maxLength: 320 }, kycAttestation: attestationSchema },
      },
      responses: { 201: { description: "Created", schema: userCreateSchema } },
      errors: ["VALIDATION_ERROR", "KYC_NOT_AVAILABLE", "DUPLICATE_USER", "USER_LIMIT_REACHED"],
    },
    async (ctx, { body }) => {
      const partner = currentPartner(ctx);
      if (body.kycAttestation && partner.kycModel !== "PARTNER_MANAGED") {
        throw new KycNotAvailableError("kycAttestation is only accepted from PARTNER_MANAGED partners");
      }
      const attestation = body.kycAttestation ? { level: body.kycAttestation.level, verifiedAt: attestedAt(body.kycAttestation) } : undefined;
      const user = await withTransaction(pool, (tx) =>
        createUser(tx, {
          partnerId: partner.id,
          partnerUserRef: body.partnerUserRef,
          ...(body.email !== undefined ? { email: body.email } : {}),
          ...(attestation ? { attestation } : {}),
          maxUsers: effectiveLimits(partner).maxUsers,
        }),
      );
      ctx.status = 201;
      ctx.body = userCreateView(user, { orderCount: 0, totalVolumeMxn: "0", monthlyVolumeMxn: "0" });
    },
  );

  api.add(
    {
      method: "get",
      path: "/users/:ref",
      tag: "Users",
      summary: "A user's detail, volumes and KYC state",
      responses: { 200: { description: "User", schema: userDetailSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      const user = await getUserByRef(pool, currentPartner(ctx).id, params.ref!);
      ctx.body = userDetailView(user, await userVolumes(pool, user.id));
    },
  );

  api.add<Attestation>(
    {
      method: "post",
      path: "/users/:ref/kyc-attestation",
      tag: "Users",
      summary: "Attest a KYC level the partner verified (PARTNER_MANAGED partners)",
      body: attestationSchema,
      responses: { 200: { description: "User detail", schema: userDetailSchema } },
      errors: ["KYC_NOT_AVAILABLE", "VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { body, params }) => {
      const partner = currentPartner(ctx);
      if (partner.kycModel !== "PARTNER_MANAGED") throw new KycNotAvailableError("Attestations are only accepted from PARTNER_MANAGED partners");
      const at = attestedAt(body);
      const user = await withTransaction(pool, async (tx) => {
        const existing = await getUserByRef(tx, partner.id, params.ref!, true);
        return approveKyc(tx, existing.id, body.level, at);
      });
      ctx.body = userDetailView(user, await userVolumes(pool, user.id));
    },
  );
}
