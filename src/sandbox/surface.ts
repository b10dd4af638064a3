// The sandbox in one module (SANDBOX=true only): the outside services' simulators mounted on the
// service's own address, and the helper routes that move an order, a payment or a KYC session the way
// the real parties would. Only the composition root (src/main.ts) imports it.
import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import type { Pool } from "../db/pool.ts";
import type { Surface } from "../http/app.ts";
import type { AppState } from "../http/context.ts";
import { createRouter } from "../http/router.ts";
import type { RouteGroup } from "../http/routes.ts";
import type { PermitIssuer } from "../market/permits.ts";
import type { MarketRouteDeps } from "../market/routes.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { kycSandboxRoutes } from "./kyc-routes.ts";
import { marketSandboxRoutes, sandboxChainRoutes } from "./market-routes.ts";
import { sandboxOrderRoutes } from "./order-routes.ts";
import { sandboxPaymentRoutes } from "./payment-routes.ts";
import { createCepPortalSimulator, type CepPortalSimulator } from "./simulators/cep-portal.ts";
import { createKycProviderSimulator, type KycProviderSimulator } from "./simulators/kyc-provider.ts";
import { createBanxicoSieSimulator, createFrankfurterSimulator, type RateSimulator } from "./simulators/rates.ts";
import { databaseSpeiPayments } from "./spei-payments.ts";

/** Where each simulator is mounted; the clients' base URL when their URL setting is unset. */
export const SIMULATOR_PREFIX = {
  banxico: "/simulators/banxico/SieAPIRest/service/v1",
  fallbackRate: "/simulators/frankfurter/v1",
  kyc: "/simulators/kyc",
  cep: "/simulators/cep",
} as const;

export interface SandboxSimulators {
  banxico: RateSimulator;
  fallbackRate: RateSimulator;
  kyc: KycProviderSimulator;
  cep: CepPortalSimulator;
}

/** The simulators of the outside services, holding the same credentials as the clients (those generated for DATA_DIR unless set). */
export function createSimulators(deps: {
  pool: Pool;
  banxicoToken: string;
  kycCredentials: { apiKey: string; secret: string };
  usdMxn: string;
  baseUrl: string;
  kycCallbackPath: string;
}): SandboxSimulators {
  const { baseUrl } = deps;
  return {
    banxico: createBanxicoSieSimulator({ token: deps.banxicoToken, rate: deps.usdMxn }),
    fallbackRate: createFrankfurterSimulator({ rate: deps.usdMxn }),
    kyc: createKycProviderSimulator({
      ...deps.kycCredentials,
      publicBaseUrl: () => `${baseUrl}${SIMULATOR_PREFIX.kyc}`,
      callbackUrl: () => `${baseUrl}${deps.kycCallbackPath}`,
    }),
    // Its payments in the database: any instance's portal finds what another's `pay` recorded.
    cep: createCepPortalSimulator({ shared: databaseSpeiPayments(deps.pool) }),
  };
}

/** What the order, payment and chain helpers need; absent when the service runs without a chain. */
export interface SandboxChain {
  gateway: EscrowGateway;
  issuePermit: PermitIssuer;
  ports: OrderEffectPorts;
  listingWindowSeconds: number;
  lockWindowSeconds: number;
}

/**
 * The sandbox surface: the simulators' routers, and the helper routes on the partner group
 * (`/api/v1/sandbox/...`). `marketRoutes` adds the buyer helpers to the market's group.
 */
export function sandboxSurface(deps: { pool: Pool; simulators: SandboxSimulators; chain: SandboxChain | undefined }): Surface & {
  marketRoutes: (market: RouteGroup, routeDeps: Pick<MarketRouteDeps, "pool" | "policy" | "indexerSchema">) => void;
} {
  const { pool: db, simulators, chain } = deps;
  const mounted = (Object.keys(SIMULATOR_PREFIX) as (keyof typeof SIMULATOR_PREFIX)[]).map((name) => {
    const mount = createRouter<unknown>({ prefix: SIMULATOR_PREFIX[name] });
    const router = simulators[name].router;
    mount.use(router.routes(), router.allowedMethods());
    return mount;
  });
  return {
    routers: mounted as unknown as ReturnType<typeof createRouter<AppState>>[],
    routes: ({ partner }) => {
      if (chain) {
        sandboxOrderRoutes(partner, { pool: db, gateway: chain.gateway, issuePermit: chain.issuePermit, listingWindowSeconds: chain.listingWindowSeconds, lockWindowSeconds: chain.lockWindowSeconds });
        sandboxPaymentRoutes(partner, { pool: db, ports: chain.ports, simulator: simulators.cep });
      }
      kycSandboxRoutes(partner, { pool: db, simulator: simulators.kyc });
      if (chain) sandboxChainRoutes(partner, { pool: db, gateway: chain.gateway });
    },
    marketRoutes: (market, routeDeps) => marketSandboxRoutes(market, { ...routeDeps, kyc: simulators.kyc, cep: simulators.cep }),
  };
}
