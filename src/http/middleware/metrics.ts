import type Koa from "koa";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AppState } from "../context.ts";

export interface HttpMetrics {
  registry: Registry;
  middleware: Koa.Middleware<AppState>;
}

/** Prometheus request counts and latencies by route template (never the raw path) and status. */
export function httpMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency by method, route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const middleware: Koa.Middleware<AppState> = async (ctx, next) => {
    const stop = latency.startTimer();
    try {
      await next();
    } finally {
      const labels = { method: ctx.method, route: (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched", status: String(ctx.status) };
      requests.inc(labels);
      stop(labels);
    }
  };
  return { registry, middleware };
}
