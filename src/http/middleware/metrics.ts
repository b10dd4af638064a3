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
  // One pair of label children per (method, route, status), made once: looking labels up by object hashes
  // them on every call, twice a request. Bounded: route templates, Node's known methods, HTTP statuses.
  const children = new Map<string, { count: { inc(): void }; observe: { observe(seconds: number): void } }>();
  const childrenOf = (method: string, route: string, status: number) => {
    const key = `${method} ${status} ${route}`;
    let pair = children.get(key);
    if (!pair) {
      const labels = { method, route, status: String(status) };
      pair = { count: requests.labels(labels), observe: latency.labels(labels) };
      children.set(key, pair);
    }
    return pair;
  };
  const record: HttpMetrics["record"] = (ctx, seconds) => {
    const pair = childrenOf(ctx.method, (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched", ctx.status);
    pair.count.inc();
    pair.observe.observe(seconds);
  };
  return { registry, record };
}
