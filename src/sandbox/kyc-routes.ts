import type { Pool } from "../db/pool.ts";
import { InvalidStateError, KycSessionFailedError, NotFoundError } from "../domain/errors.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { userDetailSchema } from "../users/routes.ts";
import { getUserById, userDetailView, userVolumes } from "../users/users.ts";
import { KycSimulatorError, type KycProviderSimulator } from "./simulators/kyc-provider.ts";

interface DecisionBody {
  result: "APPROVED" | "REJECTED";
  isPep?: boolean;
}

/**
 * `POST /api/v1/sandbox/kyc/:sessionId/decision` (decisions section 13), registered only in sandbox: the
 * simulated provider decides one of the partner's sessions and sends its signed callback to the service,
 * exactly as the hosted page's Approve / Reject buttons do. Answers the user's detail once the callback
 * has been applied. Another partner's (or an unknown) session: 404; a session already decided: 409
 * INVALID_STATE.
 */
export function kycSandboxRoutes(api: RouteGroup, deps: { pool: Pool; simulator: Pick<KycProviderSimulator, "decide"> }): void {
  const { pool } = deps;
  api.add<DecisionBody>(
    {
      method: "post",
      path: "/sandbox/kyc/:sessionId/decision",
      tag: "Sandbox",
      summary: "Sandbox: the simulated KYC provider approves or rejects a session",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["result"],
        properties: { result: { enum: ["APPROVED", "REJECTED"] }, isPep: { type: "boolean" } },
      },
      responses: { 200: { description: "User detail after the decision was applied", schema: userDetailSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "KYC_SESSION_FAILED"],
    },
    async (ctx, { body, params }) => {
      const partner = currentPartner(ctx);
      const { rows } = await pool.query<{ user_id: string }>(
        "SELECT user_id FROM kyc_sessions WHERE provider_session_id = $1 AND partner_id = $2",
        [params.sessionId, partner.id],
      );
      if (!rows[0]) throw new NotFoundError("No KYC session with this id");
      try {
        await deps.simulator.decide(params.sessionId!, body.result, body.isPep === undefined ? {} : { isPep: body.isPep });
      } catch (error) {
        if (!(error instanceof KycSimulatorError)) throw error;
        if (error.code === "SESSION_NOT_FOUND") throw new NotFoundError("The simulated provider has no session with this id");
        if (error.code === "SESSION_ALREADY_DECIDED") throw new InvalidStateError("The KYC session is already decided");
        throw new KycSessionFailedError("The simulated provider could not deliver its decision to the service");
      }
      const user = await getUserById(pool, rows[0].user_id);
      ctx.body = userDetailView(user, await userVolumes(pool, user.id));
    },
  );
}
