import type Router from "@koa/router";
import type { Registry } from "prom-client";
import type { Pool } from "../db/pool.ts";
import type { AppState } from "./context.ts";
import { createRouter } from "./router.ts";

/** Unauthenticated operator probes: liveness, readiness (database reachable) and Prometheus metrics. */
export function operatorRoutes(deps: { pool: Pool; registry: Registry }): Router<AppState> {
  const router = createRouter();
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", async (ctx) => {
    try {
      await deps.pool.query("SELECT 1");
      ctx.body = { status: "ready", database: "ok" };
    } catch {
      ctx.status = 503;
      ctx.body = { status: "not_ready", database: "unreachable" };
    }
  });
  router.get("/metrics", async (ctx) => {
    ctx.type = deps.registry.contentType;
    ctx.body = await deps.registry.metrics();
  });
  return router;
}
