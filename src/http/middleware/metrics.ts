import type Koa from "koa";
import { Counter, Registry, collectDefaultMetrics, type Metric } from "prom-client";
import type { AppState } from "../context.ts";

export interface HttpMetrics {
  registry: Registry;
  /** Counts a finished request under its route template (`_matchedRoute`, set by the router) and status. */
  record(ctx: Koa.ParameterizedContext<AppState>, seconds: number): void;
}

type RouteLabels = Record<"method" | "route" | "status", string>;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Each bucket's `le` label, the last one +Inf. */
const BUCKET_BOUNDS = [...LATENCY_BUCKETS, "+Inf" as const];

/** One (method, route, status): its request count and its latencies by bucket (the last one +Inf), not cumulated. */
interface RouteEntry {
  labels: RouteLabels;
  requests: number;
  latencySum: number;
  latencyBuckets: number[];
}

/**
 * `http_request_duration_seconds` in prom-client's histogram shape, from the entries' own bucket counts.
 * prom-client's `observe` checks and hashes the label set on every call, even through a child from
 * `labels()`, and allocates for it: 0.8 µs a call in a loop, and garbage to collect (docs/benchmarks.md, stop 58).
 */
function latencyHistogram(entries: readonly RouteEntry[]): Metric {
  const name = "http_request_duration_seconds";
  const values = () =>
    entries.flatMap(({ labels, latencySum, latencyBuckets }) => {
      let cumulated = 0;
      const buckets = BUCKET_BOUNDS.map((le, index) => {
        cumulated += latencyBuckets[index]!;
        return { metricName: `${name}_bucket`, labels: { le, ...labels }, value: cumulated };
      });
      return [...buckets, { metricName: `${name}_sum`, labels, value: latencySum }, { metricName: `${name}_count`, labels, value: cumulated }];
    });
  const histogram = {
    name,
    help: "HTTP request latency by method, route and status",
    type: "histogram",
    aggregator: "sum",
    get: async () => ({ name, help: histogram.help, type: "histogram", aggregator: "sum", values: values() }),
    reset: () => {
      for (const entry of entries) {
        entry.latencySum = 0;
        entry.latencyBuckets.fill(0);
      }
    },
  };
  return histogram as unknown as Metric;
}

/** Prometheus request counts and latencies by route template (never the raw path) and status. */
export function httpMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One entry per (method, route, status), made once, counted in plain numbers on the request's path and
  // handed to prom-client when scraped: prom-client hashes a label set on every `inc` and `observe`.
  // Bounded: route templates, Node's known methods, HTTP statuses.
  const entries: RouteEntry[] = [];
  // Found by route, method and status, without building a key on the request's path.
  const byRoute = new Map<string, Map<string, Map<number, RouteEntry>>>();
  new Counter({
    name: "http_requests_total",
    help: "HTTP requests by method, route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, requests } of entries) this.inc(labels, requests);
    },
  });
  registry.registerMetric(latencyHistogram(entries));
  const record: HttpMetrics["record"] = (ctx, seconds) => {
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
    const { method, status } = ctx;
    const byMethod = byRoute.get(route) ?? byRoute.set(route, new Map()).get(route)!;
    const byStatus = byMethod.get(method) ?? byMethod.set(method, new Map()).get(method)!;
    let entry = byStatus.get(status);
    if (!entry) {
      entry = { labels: { method, route, status: String(status) }, requests: 0, latencySum: 0, latencyBuckets: new Array<number>(BUCKET_BOUNDS.length).fill(0) };
      byStatus.set(status, entry);
      entries.push(entry);
    }
    entry.requests += 1;
    entry.latencySum += seconds;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket += 1;
    entry.latencyBuckets[bucket]! += 1;
  };
  return { registry, record };
}
