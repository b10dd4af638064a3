import assert from "node:assert/strict";
import { test } from "node:test";
import type Koa from "koa";
import { Histogram, Registry } from "prom-client";
import type { AppState } from "../../src/http/context.ts";
import { httpMetrics } from "../../src/http/middleware/metrics.ts";

// The request metrics count on the request's path in plain numbers and hand them to prom-client when
// scraped; what a scrape shows must be what prom-client's own histogram would have shown.

const requests: { method: string; status: number; route?: string; seconds: number }[] = [
  { method: "GET", status: 200, route: "/api/v1/health", seconds: 0.0004 },
  { method: "GET", status: 200, route: "/api/v1/health", seconds: 0.005 },
  { method: "GET", status: 200, route: "/api/v1/health", seconds: 0.0051 },
  { method: "GET", status: 401, route: "/api/v1/health", seconds: 0.3 },
  { method: "POST", status: 201, route: "/api/v1/orders", seconds: 12.5 },
  { method: "POST", status: 201, route: "/api/v1/orders", seconds: 2.5 },
  { method: "GET", status: 404, seconds: 0.02 },
];

const linesOf = (text: string, name: string) => text.split("\n").filter((line) => line.startsWith(name)).sort();

test("the request latency histogram scrapes as prom-client's own histogram of the same requests", async () => {
  const metrics = httpMetrics();
  const reference = new Registry();
  const histogram = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency by method, route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [reference],
  });
  for (const { method, status, route, seconds } of requests) {
    metrics.record({ method, status, ...(route ? { _matchedRoute: route } : {}) } as unknown as Koa.ParameterizedContext<AppState>, seconds);
    histogram.observe({ method, route: route ?? "unmatched", status: String(status) }, seconds);
  }
  const scraped = linesOf(await metrics.registry.metrics(), "http_request_duration_seconds");
  assert.equal(scraped.length, 4 * 14);
  assert.deepEqual(scraped, linesOf(await reference.metrics(), "http_request_duration_seconds"));
  // A second scrape shows the same, not twice it.
  assert.deepEqual(linesOf(await metrics.registry.metrics(), "http_request_duration_seconds"), scraped);
  const help = (text: string) => text.split("\n").filter((line) => line.startsWith("# ") && line.includes("http_request_duration_seconds"));
  assert.deepEqual(help(await metrics.registry.metrics()), help(await reference.metrics()));
});
