// Figure 1: authenticated GET /api/v1/health throughput, against a bare Koa handler answering the same
// JSON shape from its own child process on the same machine. Same load generator (autocannon, in the
// bench process), same connections, same duration, reference measured first.
import { cpuSeconds, spawnReady } from "../lib/child.ts";
import { hammer, type HammerOptions, type HammerResult } from "../lib/load.ts";
import { round } from "../lib/stats.ts";
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

/**
 * A warm-up, then the measured run with the answering process's CPU time (user + system) read around it:
 * its CPU per request does not depend on how the 2 cores were shared with the load generator and the rest
 * of the stack, which the rate does.
 */
async function measured(options: Omit<HammerOptions, "warmupSeconds" | "durationSeconds">, pid: number, quick: boolean): Promise<{ result: HammerResult; cpuMicrosPerRequest: number }> {
  await hammer({ ...options, durationSeconds: quick ? 1 : 3, warmupSeconds: 0 });
  const cpuBefore = cpuSeconds(pid);
  const result = await hammer({ ...options, durationSeconds: quick ? 3 : 10, warmupSeconds: 0 });
  return { result, cpuMicrosPerRequest: round(((cpuSeconds(pid) - cpuBefore) * 1e6) / result.requests, 1)! };
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const partner = await stack.createPartner({ name: "Health bench" });
  const reference = await spawnReady("bench/reference/bare-koa.ts", {});
  let bare: Awaited<ReturnType<typeof measured>>;
  try {
    bare = await measured({ url: `${reference.baseUrl}/`, connections: CONNECTIONS }, reference.pid, quick);
  } finally {
    await reference.stop();
  }
  log(`bare Koa ${bare.result.requestsPerSecond} req/s, p99 ${bare.result.latencyMs.p99} ms, ${bare.cpuMicrosPerRequest} µs CPU a request`);
  const health = await measured({ url: `${stack.service.baseUrl}/api/v1/health`, headers: { "X-API-Key": partner.apiKey }, connections: CONNECTIONS }, stack.service.pid, quick);
  log(`authenticated health ${health.result.requestsPerSecond} req/s, p99 ${health.result.latencyMs.p99} ms, non-2xx ${health.result.non2xx}, ${health.cpuMicrosPerRequest} µs CPU a request`);
  const notes = [
    "autocannon 9.0.0 driven from the bench process; the service and the reference each run in their own child process. The CPU per request is each answering process's user + system time (/proc/<pid>/stat) over the measured run divided by its requests: unlike the rate, it does not depend on how the 2 cores were shared.",
    "The partner is ENTERPRISE, its own (no other figure spends its budget), with requestsPerMinute set to 100,000,000 in the database (past the admin maximum, which a fast machine passes within the run), so rate limiting never refuses a request; any refused or failed request, warm-up included, fails the figure; every request still authenticates (the key's SHA-256 looked up in the in-memory credential cache, PostgreSQL only on a miss, a partner_changed notification or after 5 s) and counts in this instance's in-memory rate-limit window, added to the shared window in PostgreSQL every 200 ms off the request's path.",
  ];
  return {
    id: 1,
    key: "health",
    title: "Authenticated GET /api/v1/health throughput",
    status: "measured",
    figure: throughputMeasure("GET /api/v1/health (authenticated)", health.result),
    reference: throughputMeasure("bare Koa handler", bare.result),
    extra: [
      { label: "service CPU per request (user + system, measured run)", value: health.cpuMicrosPerRequest, unit: "µs" },
      { label: "bare Koa CPU per request (user + system, measured run)", value: bare.cpuMicrosPerRequest, unit: "µs" },
    ],
    comparison: ratio(health.result.requestsPerSecond, bare.result.requestsPerSecond),
    params: { connections: CONNECTIONS, durationSeconds: health.result.durationSeconds, warmupSeconds: quick ? 1 : 3 },
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
