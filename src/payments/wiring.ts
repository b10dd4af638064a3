import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { RouteGroups } from "../http/app.ts";
import { createCepPortalClient } from "../integrations/cep-portal.ts";
import type { PgBoss } from "../jobs/boss.ts";
import { startPaymentVerificationWorker } from "../workers/payment-verification.ts";
import type { Logger } from "../logger.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { sandboxPaymentRoutes } from "../sandbox/payment-routes.ts";
import type { CepPortalSimulator } from "../sandbox/simulators/cep-portal.ts";
import { paymentRoutes } from "./routes.ts";
import { createPaymentVerifier } from "./verification.ts";

/** Where the sandbox mounts the CEP portal simulator (the client's base URL when CEP_URL is unset). */
export const CEP_SIMULATOR_PREFIX = "/simulators/cep";
/** Deadline of one CEP lookup (query and download). */
export const CEP_TIMEOUT_MS = 20_000;

/**
 * Payment proof (issue 4): `POST /orders/:id/payment`, the sandbox `pay` helper and the CEP verification
 * worker, over the central bank's portal at CEP_URL (the sandbox simulator mounted on this server when unset).
 */
export function paymentsModule(deps: {
  config: Config;
  pool: Pool;
  boss: PgBoss;
  ports: OrderEffectPorts;
  logger: Logger;
  baseUrl: string;
  gateway: EscrowGateway;
  simulator: CepPortalSimulator | undefined;
}) {
  const { config, pool, boss, ports, logger, gateway, simulator } = deps;
  const portal = createCepPortalClient({ baseUrl: config.cepUrl ?? `${deps.baseUrl}${CEP_SIMULATOR_PREFIX}`, timeoutMs: CEP_TIMEOUT_MS });
  const verifier = createPaymentVerifier({ pool, ports, portal, logger, escrow: { publicClient: gateway.publicClient, address: gateway.settings.escrowAddress } });
  return {
    routes({ partner }: RouteGroups): void {
      paymentRoutes(partner, { pool, ports });
      if (config.sandbox && simulator) sandboxPaymentRoutes(partner, { pool, ports, simulator });
    },
    start: () => startPaymentVerificationWorker({ boss, pool, verifier, logger }),
  };
}
