import type Router from "@koa/router";
import Koa from "koa";
import type { Registry } from "prom-client";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { AppState } from "./context.ts";
import { adminAuth } from "./middleware/admin-auth.ts";
import { idempotency } from "./middleware/idempotency.ts";
import { httpMetrics } from "./middleware/metrics.ts";
import { partnerAuth } from "./middleware/partner-auth.ts";
import type { RateLimits } from "./middleware/rate-limit.ts";
import type { PartnerCredentials } from "../partners/credential-cache.ts";
import { requestLifecycle } from "./middleware/request-lifecycle.ts";
import { buildOpenApiDocument, docsRoutes } from "./openapi.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { createRouter } from "./router.ts";
import { RouteGroup } from "./routes.ts";

export const PARTNER_PREFIX = "/api/v1";
export const ADMIN_PREFIX = "/admin/v1";

export interface RouteGroups {
  partner: RouteGroup;
  admin: RouteGroup;
}

/** An API with its own prefix, guards and OpenAPI document (market, dashboard), mounted beside the partner and admin APIs. */
export interface OwnApi {
  /** `<prefix>/openapi.json`: every route of the API, its guarded fallback included, is under that prefix. */
  documentUrl: string;
  document: unknown;
  middleware: Koa.Middleware<AppState>;
}

/**
 * What one surface (partner API, admin API, sandbox, market, dashboard) mounts: routes on the partner
 * (`/api/v1`) and admin (`/admin/v1`) groups, unauthenticated routers (callbacks, pages, simulators), and
 * an API of its own under its own prefix.
 */
export interface Surface {
  routes?: (groups: RouteGroups) => void;
  routers?: Router<AppState>[];
  api?: OwnApi;
}

export interface AppDependencies {
  config: Config;
  pool: Pool;
  /** Sessions that hold each Idempotency-Key's claim open while its request runs (middleware/idempotency.ts). */
  idempotencySessions: Pool;
  logger: Logger;
  adminToken: string;
  /** Partners by API key, in memory (src/partners/credential-cache.ts). */
  credentials: PartnerCredentials;
  /** The shared rate-limit windows, counted in memory and flushed in batches (rate-limit.ts). */
  rateLimits: RateLimits;
  /** Mounted in this order; each adds its routes to the shared groups before their documents are built. */
  surfaces: Surface[];
  /** Lines /readyz adds without failing on them, and gauges for /metrics (the signer's balance). */
  operator?: { reports?: () => Record<string, string>; registerMetrics?: (registry: Registry) => void };
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
  app.use(requestLifecycle({ logger, metrics }));

  // Authentication and rate limits are the groups' own guards: they run before the body is read, so the
  // route itself, body included, is checked last (decisions section 3), and every /api/v1 answer is counted.
  const partner = new RouteGroup({ prefix: PARTNER_PREFIX, security: "apiKey", guards: [partnerAuth(deps)], idempotency: idempotency(deps.idempotencySessions, pool) });
  const admin = new RouteGroup({ prefix: ADMIN_PREFIX, security: "bearer", guards: [adminAuth(deps.adminToken, pool)] });
  const groups = { partner, admin };
  for (const surface of deps.surfaces) surface.routes?.(groups);

  const openApiUrl = `${PARTNER_PREFIX}/openapi.json`;
  const partnerDocument = buildOpenApiDocument({ title: "Offramp partner API", version: "1.0.0", serverUrl: PARTNER_PREFIX, groups: [partner] });
  const adminDocument = buildOpenApiDocument({ title: "Offramp admin API", version: "1.0.0", serverUrl: ADMIN_PREFIX, groups: [admin] });

  // Public: operator probes, metrics, the API document and its rendered reference.
  const open = createRouter();
  open.get(openApiUrl, (ctx) => {
    ctx.body = partnerDocument;
  });
  const openRoutes = open.routes() as Koa.Middleware<AppState>;
  const partnerRoutes = partner.middleware();
  // A path under the partner prefix goes straight to its document or the partner group, whose guarded
  // fallback answers whatever the group's routes do not (the document's other methods go on to it below):
  // no other router has a route under /api/v1/, and matching every partner request against each of theirs
  // first was about a tenth of its CPU (docs/benchmarks.md, figure 1). A surface that adds a router under
  // /api/v1/ must be mounted here.
  app.use((ctx, next) => {
    if (ctx.path === openApiUrl) return openRoutes(ctx, next);
    return ctx.path.startsWith(`${PARTNER_PREFIX}/`) ? partnerRoutes(ctx, next) : next();
  });
  deps.operator?.registerMetrics?.(metrics.registry);
  app.use(operatorRoutes({ pool, registry: metrics.registry, ...(deps.operator?.reports ? { reports: deps.operator.reports } : {}) }).routes());
  app.use(docsRoutes(openApiUrl).routes());
  for (const router of deps.surfaces.flatMap((surface) => surface.routers ?? [])) app.use(router.routes()).use(router.allowedMethods());

  for (const api of deps.surfaces.flatMap((surface) => (surface.api ? [surface.api] : []))) {
    const documentRoute = createRouter();
    documentRoute.get(api.documentUrl, (ctx) => {
      ctx.body = api.document;
    });
    app.use(documentRoute.routes());
    // A request outside the API's prefix skips its routers: matching every other request against each of
    // their routes cost about 5% of the partner API's CPU (docs/benchmarks.md, figure 1).
    const prefix = api.documentUrl.slice(0, api.documentUrl.lastIndexOf("/"));
    app.use((ctx, next) => (ctx.path.startsWith(prefix) ? api.middleware(ctx, next) : next()));
  }

  app.use(partnerRoutes);

  const adminDocumentRoute = createRouter();
  adminDocumentRoute.get(`${ADMIN_PREFIX}/openapi.json`, (ctx) => {
    ctx.body = adminDocument;
  });
  app.use(adminDocumentRoute.routes());
  app.use(admin.middleware());

  return { app, groups };
}
