import type Koa from "koa";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AppState } from "../context.ts";

export interface HttpMetrics {
  registry: Registry;
  /** Counts a finished request under its route template (`_matchedRoute`, set by the router) and status. */
  record(ctx: Koa.ParameterizedContext<AppState>, seconds: number): void;
}

/** Prometheus request counts and latencies by route template (never the raw path) and status. */
export function httpMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One entry per (method, route, status), made once: prom-client hashes a label set on every observation,
  // even through a child. Bounded: route templates, Node's known methods, HTTP statuses.
  const routes = new Map<string, { labels: Record<"method" | "route" | "status", string>; requests: number; latency: { observe(seconds: number): void } }>();
  new Counter({
    name: "http_requests_total",
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
    // Counted in plain numbers on the request's path and handed to prom-client when scraped.
    collect() {
      this.reset();
      for (const { labels, requests } of routes.values()) this.inc(labels, requests);
    },
  });
  const latency = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency by method, route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const record: HttpMetrics["record"] = (ctx, seconds) => {
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
    const key = `${ctx.method} ${ctx.status} ${route}`;
    let entry = routes.get(key);
    if (!entry) {
      const labels = { method: ctx.method, route, status: String(ctx.status) };
      entry = { labels, requests: 0, latency: latency.labels(labels) };
      routes.set(key, entry);
    }
    entry.requests += 1;
    entry.latency.observe(seconds);
  };
  return { registry, record };
}
