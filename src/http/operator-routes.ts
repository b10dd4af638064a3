import type Router from "@koa/router";
import type { Registry } from "prom-client";
import type { Pool } from "../db/pool.ts";
import type { AppState } from "./context.ts";
import { createRouter } from "./router.ts";

/**
 * Unauthenticated operator probes: liveness, readiness (database reachable) and Prometheus metrics.
 * `reports` adds lines to /readyz that name a problem without making the instance unready (the signer's
 * balance: an instance that cannot pay for gas still serves everything else).
 */
export function operatorRoutes(deps: { pool: Pool; registry: Registry; reports?: () => Record<string, string> }): Router<AppState> {
  const router = createRouter();
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", async (ctx) => {
    try {
      await deps.pool.query("SELECT 1");
      ctx.body = { status: "ready", database: "ok", ...deps.reports?.() };
    } catch {
      ctx.status = 503;
      ctx.body = { status: "not_ready", database: "unreachable", ...deps.reports?.() };
    }
  });
  router.get("/metrics", async (ctx) => {
    ctx.type = deps.registry.contentType;
    ctx.body = await deps.registry.metrics();
  });
  return router;
}
