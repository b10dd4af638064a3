import type Koa from "koa";
import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { SanctionsList } from "../domain/sanctions.ts";
import type { Surface } from "../http/app.ts";
import type { AppState } from "../http/context.ts";
import { buildOpenApiDocument } from "../http/openapi.ts";
import type { RateLimits } from "../http/middleware/rate-limit.ts";
import { limitPerAddress, limitSessions, MARKET_SESSION_REQUESTS_PER_MINUTE } from "../http/middleware/surface-limits.ts";
import { RouteGroup } from "../http/routes.ts";
import type { KycProviderClient } from "../integrations/kyc-provider.ts";
import type { Logger } from "../logger.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { adminBuyerRoutes } from "./admin-routes.ts";
import { buyerSessionGuard, currentBuyer } from "./auth.ts";
import type { BuyerPolicy } from "./buyers.ts";
import { marketPageRouter } from "./page.ts";
import { createPermitIssuer, type PermitIssuer } from "./permits.ts";
import { MARKET_AUTH_REQUESTS_PER_MINUTE, MARKET_BOOK_REQUESTS_PER_MINUTE, MARKET_PREFIX, marketRoutes, orderBookRoutes, type MarketRouteDeps } from "./routes.ts";

export function buyerPolicy(config: Config): BuyerPolicy {
  return { maxOpenLocks: config.buyerMaxOpenLocks, maxExpiredLocks: config.buyerMaxExpiredLocks, sandbox: config.sandbox };
}

/** The lock permits both the market route and the sandbox lock helper issue (decisions 13 and 17). */
export function marketPermits(deps: { config: Config; pool: Pool; gateway: EscrowGateway; sanctions: SanctionsList }): PermitIssuer {
  return createPermitIssuer({
    pool: deps.pool,
    policy: buyerPolicy(deps.config),
    sanctions: deps.sanctions,
    chain: { chainId: deps.gateway.settings.chainId, escrowAddress: deps.gateway.settings.escrowAddress, signLockPermit: deps.gateway.signLockPermit },
  });
}

/**
 * The buyer market (issue 14, decisions 17): the API under /market/v1 with its own OpenAPI document,
 * the admin buyer routes and the page at /market. In sandbox, `sandboxRoutes` (the sandbox surface's
 * buyer helpers) are added to the session-guarded group before its document is built.
 */
export function marketModule(deps: {
  config: Config;
  pool: Pool;
  logger: Logger;
  gateway: EscrowGateway;
  permits: PermitIssuer;
  ports: OrderEffectPorts;
  kycProvider: Pick<KycProviderClient, "createSession">;
  indexerSchema: string | undefined;
  sandboxRoutes: ((market: RouteGroup, deps: Pick<MarketRouteDeps, "pool" | "policy" | "indexerSchema">) => void) | undefined;
  rateLimits: RateLimits;
  /** The service's public origin (PUBLIC_URL): the sign-in messages' domain and URI. */
  publicUrl: string;
}): Surface {
  const { config, pool } = deps;
  const policy = buyerPolicy(config);
  // Sign-in and the public book take no credential: each has its own budget per client address, in the
  // shared windows with their X-RateLimit-* headers (decisions 19), so browsing never uses up sign-in's.
  const open = new RouteGroup({ prefix: MARKET_PREFIX, security: "none", guards: [limitPerAddress(deps.rateLimits, "market-auth", MARKET_AUTH_REQUESTS_PER_MINUTE)] });
  const book = new RouteGroup({ prefix: MARKET_PREFIX, security: "none", guards: [limitPerAddress(deps.rateLimits, "market-book", MARKET_BOOK_REQUESTS_PER_MINUTE)] });
  // Each buyer's sessions share one rate-limit window; refused tokens count against their address (decisions 19).
  const sessionGuard = limitSessions(buyerSessionGuard(pool), { rateLimits: deps.rateLimits, surface: "market", limit: MARKET_SESSION_REQUESTS_PER_MINUTE, holderOf: currentBuyer });
  const market = new RouteGroup({ prefix: MARKET_PREFIX, security: "bearer", guards: [sessionGuard] });
  const routeDeps = {
    pool,
    logger: deps.logger,
    sandbox: config.sandbox,
    policy,
    signIn: { pool, chainId: deps.gateway.settings.chainId, publicClient: deps.gateway.publicClient, policy, publicUrl: deps.publicUrl },
    issuePermit: deps.permits,
    ports: deps.ports,
    kycProvider: deps.kycProvider,
    indexerSchema: deps.indexerSchema,
  };
  marketRoutes(open, market, routeDeps);
  orderBookRoutes(book, routeDeps);
  deps.sandboxRoutes?.(market, routeDeps);

  const document = buildOpenApiDocument({ title: "Offramp market API", version: "1.0.0", serverUrl: MARKET_PREFIX, groups: [open, book, market] });
  // The bearer scheme here is the buyer's session token, not the admin token: named for what it is.
  const named = JSON.parse(JSON.stringify(document).replaceAll('"adminToken"', '"marketSession"')) as typeof document;
  named.components.securitySchemes = { marketSession: { type: "http", scheme: "bearer", description: "mks_ token from POST /auth/session" } } as never;

  // Sign-in routes and the public book first, without a fallback of their own; then the session-guarded
  // routes and the guarded fallback, so any other path under /market/v1 answers 401 without a session.
  const openRoutes = open.router.routes() as Koa.Middleware<AppState>;
  const bookRoutes = book.router.routes() as Koa.Middleware<AppState>;
  const guarded = market.middleware();
  return {
    api: {
      documentUrl: `${MARKET_PREFIX}/openapi.json`,
      document: named,
      middleware: (ctx, next) => openRoutes(ctx, () => bookRoutes(ctx, () => guarded(ctx, next))),
    },
    routes: ({ admin }) => adminBuyerRoutes(admin, { pool, policy, indexerSchema: deps.indexerSchema }),
    routers: [marketPageRouter()],
  };
}
