// Figure 1: authenticated GET /api/v1/health throughput, against a bare Koa handler answering the same
// JSON shape from its own child process on the same machine. Same load generator (autocannon, in the
// bench process), same connections, same duration, the two measured in alternating slices.
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

interface Side {
  options: Omit<HammerOptions, "warmupSeconds" | "durationSeconds">;
  pid: number;
}

/** Slices of one side's measured run merged: requests and seconds summed, each latency the worst slice's. */
function merged(slices: HammerResult[]): HammerResult {
  const requests = slices.reduce((sum, slice) => sum + slice.requests, 0);
  const seconds = slices.reduce((sum, slice) => sum + slice.durationSeconds, 0);
  const worst = (pick: (slice: HammerResult) => number | null) => Math.max(...slices.map((slice) => pick(slice) ?? 0));
  return {
    connections: slices[0]!.connections,
    durationSeconds: round(seconds, 2)!,
    requests,
    requestsPerSecond: round(requests / seconds, 0),
    latencyMs: { p50: worst((slice) => slice.latencyMs.p50), p90: worst((slice) => slice.latencyMs.p90), p99: worst((slice) => slice.latencyMs.p99), max: worst((slice) => slice.latencyMs.max) },
    non2xx: slices.reduce((sum, slice) => sum + slice.non2xx, 0),
    errors: slices.reduce((sum, slice) => sum + slice.errors, 0),
    timeouts: slices.reduce((sum, slice) => sum + slice.timeouts, 0),
  };
}

/**
 * A warm-up of each side, then their measured runs in alternating slices (reference, service, reference,
 * ...), each answering process's CPU time (user + system) read around its own slices. This machine's
 * speed moves by half within minutes: measured one after the other, a slow minute under the reference
 * alone once made the figure look met (stop 36). Interleaved, both sides see the same minutes; the CPU
 * per request also does not count the time a process waited for a core.
 */
async function measuredSideBySide(reference: Side, service: Side, quick: boolean): Promise<[Measured, Measured]> {
  for (const side of [reference, service]) await hammer({ ...side.options, durationSeconds: quick ? 1 : 3, warmupSeconds: 0 });
  const sides = [reference, service].map((side) => ({ side, slices: [] as HammerResult[], cpuSeconds: 0 }));
  for (let slice = 0; slice < (quick ? 3 : SLICES); slice += 1) {
    for (const entry of sides) {
      const cpuBefore = cpuSeconds(entry.side.pid);
      entry.slices.push(await hammer({ ...entry.side.options, durationSeconds: SLICE_SECONDS, warmupSeconds: 0 }));
      entry.cpuSeconds += cpuSeconds(entry.side.pid) - cpuBefore;
    }
  }
  const [bare, health] = sides.map(({ slices, cpuSeconds: cpu }) => {
    const result = merged(slices);
    return { result, cpuMicrosPerRequest: round((cpu * 1e6) / result.requests, 1)! };
  });
  return [bare!, health!];
}

interface Measured {
  result: HammerResult;
  cpuMicrosPerRequest: number;
}

/** Measured slices per side (3 in quick mode), each SLICE_SECONDS long: 10 s a side in all. */
const SLICES = 5;
const SLICE_SECONDS = 2;

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const partner = await stack.createPartner({ name: "Health bench" });
  const reference = await spawnReady("bench/reference/bare-koa.ts", {});
  let bare: Measured;
  let health: Measured;
  try {
    [bare, health] = await measuredSideBySide(
      { options: { url: `${reference.baseUrl}/`, connections: CONNECTIONS }, pid: reference.pid },
      { options: { url: `${stack.service.baseUrl}/api/v1/health`, headers: { "X-API-Key": partner.apiKey }, connections: CONNECTIONS }, pid: stack.service.pid },
      quick,
    );
  } finally {
    await reference.stop();
  }
  log(`bare Koa ${bare.result.requestsPerSecond} req/s, p99 ${bare.result.latencyMs.p99} ms, ${bare.cpuMicrosPerRequest} µs CPU a request`);
  log(`authenticated health ${health.result.requestsPerSecond} req/s, p99 ${health.result.latencyMs.p99} ms, non-2xx ${health.result.non2xx}, ${health.cpuMicrosPerRequest} µs CPU a request`);
  const notes = [
    `autocannon 9.0.0 driven from the bench process; the service and the reference each run in their own child process, both up for the whole figure. After a warm-up of each, they are measured in alternating slices of ${SLICE_SECONDS} s (reference, service, reference, ...; ${SLICES} each in a full run), so that both see the same minutes of a machine whose speed moves; latencies are the worst slice's. The CPU per request is each answering process's user + system time (/proc/<pid>/stat) over its measured slices divided by their requests: unlike the rate, it does not depend on how the 2 cores were shared.`,
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
    params: { connections: CONNECTIONS, durationSeconds: health.result.durationSeconds, warmupSeconds: quick ? 1 : 3, slices: quick ? 3 : SLICES, sliceSeconds: SLICE_SECONDS },
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
