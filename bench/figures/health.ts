// Figure 1: authenticated GET /api/v1/health throughput, against a bare Koa handler answering the same
// JSON shape from its own child process on the same machine. Same load generator (autocannon, in the
// bench process), same connections, same duration, reference measured first.
import { spawnReady } from "../lib/child.ts";
import { hammer, type HammerResult } from "../lib/load.ts";
import type { Measure } from "../lib/report.ts";
import { meets, ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

export const CONNECTIONS = 10;

export function throughputMeasure(label: string, result: HammerResult): Measure {
  return {
    label,
    value: result.requestsPerSecond,
    unit: "req/s",
    detail: {
      p50Ms: result.latencyMs.p50,
      p90Ms: result.latencyMs.p90,
      p99Ms: result.latencyMs.p99,
      maxMs: result.latencyMs.max,
      requests: result.requests,
      seconds: result.durationSeconds,
      connections: result.connections,
      non2xx: result.non2xx,
      errors: result.errors,
    },
  };
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const durationSeconds = quick ? 3 : 10;
  const warmupSeconds = quick ? 1 : 3;
  const partner = await stack.createPartner({ name: "Health bench" });
  const reference = await spawnReady("bench/reference/bare-koa.ts", {});
  let bare: HammerResult;
  try {
    bare = await hammer({ url: `${reference.baseUrl}/`, connections: CONNECTIONS, durationSeconds, warmupSeconds });
  } finally {
    await reference.stop();
  }
  log(`bare Koa ${bare.requestsPerSecond} req/s, p99 ${bare.latencyMs.p99} ms`);
  const health = await hammer({
    url: `${stack.service.baseUrl}/api/v1/health`,
    headers: { "X-API-Key": partner.apiKey },
    connections: CONNECTIONS,
    durationSeconds,
    warmupSeconds,
  });
  log(`authenticated health ${health.requestsPerSecond} req/s, p99 ${health.latencyMs.p99} ms, non-2xx ${health.non2xx}`);
  const notes = [
    "autocannon 9.0.0 driven from the bench process; the service and the reference each run in their own child process.",
    "The partner is ENTERPRISE, its own (no other figure spends its budget), with requestsPerMinute set to 100,000,000 in the database (past the admin maximum, which a fast machine passes within the run), so rate limiting never refuses a request; any refused or failed request, warm-up included, fails the figure; every request still authenticates (the key's SHA-256 looked up in the in-memory credential cache, PostgreSQL only on a miss, a partner_changed notification or after 5 s) and counts in this instance's in-memory rate-limit window, added to the shared window in PostgreSQL every 200 ms off the request's path.",
  ];
  return {
    id: 1,
    key: "health",
    title: "Authenticated GET /api/v1/health throughput",
    status: "measured",
    figure: throughputMeasure("GET /api/v1/health (authenticated)", health),
    reference: throughputMeasure("bare Koa handler", bare),
    extra: [],
    comparison: ratio(health.requestsPerSecond, bare.requestsPerSecond),
    params: { connections: CONNECTIONS, durationSeconds, warmupSeconds },
    notes,
  };
}

export const healthFigure: FigureSpec = {
  id: 1,
  key: "health",
  title: "Authenticated GET /api/v1/health throughput",
  target: { text: ">= 0.5 x bare Koa", met: (o) => meets([o.figure?.value, o.reference?.value], (health, bare) => health >= 0.5 * bare) },
  run,
};
