import type Router from "@koa/router";
import Koa from "koa";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { adminPartnerRoutes, type WebhookUrlCheck } from "../admin/partner-routes.ts";
import type { Logger } from "../logger.ts";
import type { ExchangeRates } from "../rates/exchange-rates.ts";
import type { AppState } from "./context.ts";
import { errorResponses } from "./errors.ts";
import { adminAuth } from "./middleware/admin-auth.ts";
import { idempotency } from "./middleware/idempotency.ts";
import { httpMetrics } from "./middleware/metrics.ts";
import { partnerAuth } from "./middleware/partner-auth.ts";
import { requestContext } from "./middleware/request-context.ts";
import { buildOpenApiDocument, docsRoutes } from "./openapi.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { createRouter } from "./router.ts";
import { RouteGroup } from "./routes.ts";
import { exchangeRateRoutes } from "../rates/routes.ts";
import { healthRoutes } from "./health-routes.ts";
import { quoteRoutes } from "../quotes/routes.ts";
import { userRoutes } from "../users/routes.ts";

export const PARTNER_PREFIX = "/api/v1";
export const ADMIN_PREFIX = "/admin/v1";

export interface RouteGroups {
  partner: RouteGroup;
  admin: RouteGroup;
}

/** An API with its own prefix, guards and OpenAPI document (market, dashboard), mounted beside the partner and admin APIs. */
export interface Surface {
  documentUrl: string;
  document: unknown;
  middleware: Koa.Middleware<AppState>;
}

export interface AppDependencies {
  config: Config;
  pool: Pool;
  logger: Logger;
  rates: ExchangeRates;
  adminToken: string;
  checkWebhookUrl: WebhookUrlCheck;
  /** Outside-service simulators mounted in sandbox, each at its own prefix (e.g. /simulators/banxico). */
  simulators?: { prefix: string; router: Router }[];
  /** Routes of other capabilities (orders, webhooks, sandbox helpers...), registered on the same groups. */
  routeModules?: ((groups: RouteGroups) => void)[];
  /** Unauthenticated routers outside /api/v1 (provider callbacks, the operator console). */
  publicRouters?: Router<AppState>[];
  /** Other APIs with their own document (the market under /market/v1, the dashboard under /dashboard/v1). */
  surfaces?: Surface[];
}

export function createApp(deps: AppDependencies): { app: Koa<AppState>; groups: RouteGroups } {
  const { config, pool, logger } = deps;
  const app = new Koa<AppState>();
  // TRUST_PROXY is the number of proxies in front: the client address is taken that many hops from the
  // right of X-Forwarded-For, so whatever a client writes at its left is never believed.
  app.proxy = config.trustProxy > 0;
  app.maxIpsCount = config.trustProxy;
  app.silent = true;

  const metrics = httpMetrics();
  app.use(requestContext(logger));
  app.use(metrics.middleware);
  app.use(errorResponses());

  // Authentication and rate limits are the groups' own guards: they run before the body is read, so the
  // route itself, body included, is checked last (decisions section 3), and every /api/v1 answer is counted.
  const partner = new RouteGroup({ prefix: PARTNER_PREFIX, security: "apiKey", guards: [partnerAuth(pool)], idempotency: idempotency(pool) });
  const admin = new RouteGroup({ prefix: ADMIN_PREFIX, security: "bearer", guards: [adminAuth(deps.adminToken, pool)] });
  healthRoutes(partner);
  exchangeRateRoutes(partner, { rates: deps.rates, validitySeconds: config.rateValiditySeconds });
  userRoutes(partner, { pool });
  quoteRoutes(partner, { pool, rates: deps.rates, quoteTtlSeconds: config.quoteTtlSeconds });
  adminPartnerRoutes(admin, { pool, checkWebhookUrl: deps.checkWebhookUrl });
  const groups = { partner, admin };
  for (const register of deps.routeModules ?? []) register(groups);

  const openApiUrl = `${PARTNER_PREFIX}/openapi.json`;
  const partnerDocument = buildOpenApiDocument({ title: "Offramp partner API", version: "1.0.0", serverUrl: PARTNER_PREFIX, groups: [partner] });
  const adminDocument = buildOpenApiDocument({ title: "Offramp admin API", version: "1.0.0", serverUrl: ADMIN_PREFIX, groups: [admin] });

  // Public: operator probes, metrics, the API document and its rendered reference.
  const open = createRouter();
  open.get(openApiUrl, (ctx) => {
    ctx.body = partnerDocument;
  });
  app.use(open.routes());
  app.use(operatorRoutes({ pool, registry: metrics.registry }).routes());
  app.use(docsRoutes(openApiUrl).routes());
  for (const router of deps.publicRouters ?? []) app.use(router.routes()).use(router.allowedMethods());
  if (config.sandbox) {
    for (const simulator of deps.simulators ?? []) {
      const mount = createRouter<unknown>({ prefix: simulator.prefix });
      mount.use(simulator.router.routes(), simulator.router.allowedMethods());
      app.use(mount.routes());
    }
  }

  for (const surface of deps.surfaces ?? []) {
    const documentRoute = createRouter();
    documentRoute.get(surface.documentUrl, (ctx) => {
      ctx.body = surface.document;
    });
    app.use(documentRoute.routes());
    app.use(surface.middleware);
  }

  app.use(partner.middleware());

  const adminDocumentRoute = createRouter();
  adminDocumentRoute.get(`${ADMIN_PREFIX}/openapi.json`, (ctx) => {
    ctx.body = adminDocument;
  });
  app.use(adminDocumentRoute.routes());
  app.use(admin.middleware());

  return { app, groups };
}
