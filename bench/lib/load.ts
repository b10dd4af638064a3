// Load generators. `hammer` drives autocannon (raw keep-alive sockets, far cheaper per request than
// fetch) for single-request throughput, in the bench process or, for a server that itself runs in
// the bench process (the webhook receiver), in a child process of its own; `closedLoop` runs multi-step units (a quote then an order, a
// whole trade) from a fixed number of concurrent workers, each starting its next unit when the last
// one finished. Both are bounded in time and in count.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import autocannon from "autocannon";
import { nowMs, round, summarize, type LatencySummary } from "./stats.ts";

export interface HammerOptions {
  url: string;
  headers?: Record<string, string>;
  connections: number;
  /** Measured seconds (after the warm-up). */
  durationSeconds: number;
  /** Unmeasured seconds first (JIT, pools, caches). */
  warmupSeconds: number;
  /** Hard cap on requests per measured run (0 = duration only). */
  maxRequests?: number;
  /** GET unless given; `body` is sent with every request. */
  method?: "GET" | "POST";
  body?: string;
  /** Run autocannon in its own process (its CLI), so it does not share the event loop of the server it loads. */
  inChildProcess?: boolean;
}

export interface HammerResult {
  connections: number;
  durationSeconds: number;
  requests: number;
  requestsPerSecond: number | null;
  latencyMs: { p50: number | null; p90: number | null; p99: number | null; max: number | null };
  non2xx: number;
  errors: number;
  timeouts: number;
}

const autocannonCli = createRequire(import.meta.url).resolve("autocannon/autocannon.js");

async function once(options: HammerOptions, seconds: number): Promise<autocannon.Result> {
  if (options.inChildProcess) {
    const args = [autocannonCli, "--json", "--no-progress", "-c", String(options.connections), "-d", String(seconds), "-t", "10", "-m", options.method ?? "GET"];
    for (const [name, value] of Object.entries(options.headers ?? {})) args.push("-H", `${name}=${value}`);
    if (options.body !== undefined) args.push("-b", options.body);
    if (options.maxRequests) args.push("-a", String(options.maxRequests));
    const { stdout } = await promisify(execFile)(process.execPath, [...args, options.url], { maxBuffer: 16 * 2 ** 20, timeout: (seconds + 60) * 1000 });
    return JSON.parse(stdout) as autocannon.Result;
  }
  return autocannon({
    url: options.url,
    method: options.method ?? "GET",
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { body: options.body } : {}),
    connections: options.connections,
    duration: seconds,
    ...(options.maxRequests ? { amount: options.maxRequests } : {}),
    timeout: 10,
  });
}

/** Warm-up then one measured autocannon run. */
export async function hammer(options: HammerOptions): Promise<HammerResult> {
  if (options.warmupSeconds > 0) await once(options, options.warmupSeconds);
  const result = await once(options, options.durationSeconds);
  const seconds = result.duration > 0 ? result.duration : options.durationSeconds;
  return {
    connections: options.connections,
    durationSeconds: round(seconds, 2) ?? options.durationSeconds,
    requests: result.requests.total,
    requestsPerSecond: round(result.requests.total / seconds, 0),
    latencyMs: { p50: round(result.latency.p50, 2), p90: round(result.latency.p90, 2), p99: round(result.latency.p99, 2), max: round(result.latency.max, 2) },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

export interface ClosedLoopOptions {
  concurrency: number;
  /** Stop starting units after this long. */
  durationMs: number;
  /** Stop starting units after this many (across workers). */
  maxUnits: number;
  /** Unmeasured units per worker first. */
  warmupUnits?: number;
}

export interface ClosedLoopResult {
  concurrency: number;
  units: number;
  failures: number;
  elapsedSeconds: number | null;
  unitsPerSecond: number | null;
  /**
   * Completed units per second up to the last one's end: the rate without the tail a failing unit
   * adds when it fails only at its timeout (equal to unitsPerSecond when none did).
   */
  unitsPerSecondToLastCompleted: number | null;
  latencyMs: LatencySummary;
  firstErrors: string[];
}

/**
 * Runs `unit(worker, index)` from `concurrency` workers until the time or count bound; returns
 * completed units per second over the measured span and each unit's latency. A failed unit counts as
 * a failure (not in the latencies); three failures in a row stop its worker.
 */
export async function closedLoop(options: ClosedLoopOptions, unit: (worker: number, index: number) => Promise<void>): Promise<ClosedLoopResult> {
  const warmup = options.warmupUnits ?? 0;
  if (warmup > 0) {
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, worker) => {
        for (let i = 0; i < warmup; i += 1) await unit(worker, -1 - i).catch(() => undefined);
      }),
    );
  }
  const latencies: number[] = [];
  const errors: string[] = [];
  let failures = 0;
  let started = 0;
  let lastCompleted = 0;
  const start = nowMs();
  const deadline = start + options.durationMs;
  await Promise.all(
    Array.from({ length: options.concurrency }, async (_, worker) => {
      let consecutive = 0;
      while (nowMs() < deadline && started < options.maxUnits && consecutive < 3) {
        const index = started;
        started += 1;
        const t0 = nowMs();
        try {
          await unit(worker, index);
          latencies.push(nowMs() - t0);
          lastCompleted = nowMs();
          consecutive = 0;
        } catch (error) {
          failures += 1;
          consecutive += 1;
          if (errors.length < 5) errors.push((error as Error).message.slice(0, 300));
        }
      }
    }),
  );
  const elapsed = (nowMs() - start) / 1000;
  return {
    concurrency: options.concurrency,
    units: latencies.length,
    failures,
    elapsedSeconds: round(elapsed, 2),
    unitsPerSecond: round(latencies.length / elapsed, 2),
    unitsPerSecondToLastCompleted: latencies.length > 0 ? round(latencies.length / ((lastCompleted - start) / 1000), 2) : null,
    latencyMs: summarize(latencies),
    firstErrors: errors,
  };
}
