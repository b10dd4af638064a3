// Everything KYC needs from the service's start-up, in one place (src/main.ts calls these two functions).
import type Router from "@koa/router";
import { adminKycRoutes } from "../admin/kyc-routes.ts";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { RouteGroups } from "../http/app.ts";
import type { AppState } from "../http/context.ts";
import { KYC_CALLBACK_PATH, kycCallbackRouter } from "./callback-routes.ts";
import { kycRoutes } from "./routes.ts";
import { createKycProviderClient, type KycProviderClient } from "../integrations/kyc-provider.ts";
import type { Logger } from "../logger.ts";
import { kycSandboxRoutes } from "../sandbox/kyc-routes.ts";
import { createKycProviderSimulator, type KycProviderSimulator } from "../sandbox/simulators/kyc-provider.ts";

export const KYC_SIMULATOR_PREFIX = "/simulators/kyc";
/** Per-call timeout for session creation at the provider; past it, KYC_SESSION_FAILED. */
export const KYC_PROVIDER_TIMEOUT_MS = 15_000;

/** The provider's API key and callback secret: KYC_PROVIDER_API_KEY/SECRET, or in sandbox those generated for DATA_DIR. */
export interface KycCredentials {
  apiKey: string;
  secret: string;
}

/** The sandbox provider simulator, mounted at KYC_SIMULATOR_PREFIX on the service's own address. */
export function createSandboxKycSimulator(credentials: KycCredentials, baseUrl: string): KycProviderSimulator {
  return createKycProviderSimulator({
    ...credentials,
    publicBaseUrl: () => `${baseUrl}${KYC_SIMULATOR_PREFIX}`,
    callbackUrl: () => `${baseUrl}${KYC_CALLBACK_PATH}`,
  });
}

export interface KycModule {
  provider: KycProviderClient;
  /** For `createApp({ routeModules })`: POST /users/:ref/kyc, the sandbox decision route, admin usage. */
  routes: (groups: RouteGroups) => void;
  /** For `createApp({ publicRouters })`: the provider's signed callback at KYC_CALLBACK_PATH. */
  callbackRouter: Router<AppState>;
}

/**
 * The provider client (KYC_PROVIDER_URL, or the sandbox simulator on the service's own address) and the
 * routes. The sandbox decision route is registered only when SANDBOX is on and the simulator runs.
 */
export function kycModule(options: {
  config: Config;
  credentials: KycCredentials;
  pool: Pool;
  logger: Logger;
  baseUrl: string;
  simulator: KycProviderSimulator | undefined;
}): KycModule {
  const { config, pool, logger, simulator } = options;
  const provider = createKycProviderClient({
    baseUrl: config.kycProviderUrl ?? `${options.baseUrl}${KYC_SIMULATOR_PREFIX}`,
    ...options.credentials,
    timeoutMs: KYC_PROVIDER_TIMEOUT_MS,
  });
  return {
    provider,
    routes: ({ partner, admin }) => {
      kycRoutes(partner, { pool, provider, sandbox: config.sandbox, logger });
      if (config.sandbox && simulator) kycSandboxRoutes(partner, { pool, simulator });
      adminKycRoutes(admin, { pool });
    },
    callbackRouter: kycCallbackRouter({ pool, provider, logger }),
  };
}
