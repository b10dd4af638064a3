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
  /**
   * Requests from many client addresses (an `X-Forwarded-For` from the benchmarking range 198.18.0.0/15,
   * RFC 2544), as a public route is read by many visitors: each address sends this many requests in a
   * row, then the next address takes over (1: every request from an address never seen before). The
   * service must trust one proxy (the bench stack's `TRUST_PROXY=1`), so per-address limits see many
   * clients, not one.
   */
  requestsPerClient?: number;
}

/** Addresses of the benchmarking range 198.18.0.0/15, each given to `requestsPerClient` requests in a row. */
let clientRequests = 0;
function clientAddress(requestsPerClient: number): string {
  const n = (Math.floor(clientRequests++ / requestsPerClient) % (2 ** 17 - 2)) + 1;
  return `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
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

/**
 * A measured run in which some requests were refused or failed (decisions 14: such a figure is
 * reported as failed with its first errors, never as a number). The bench's runner catches it and
 * records the figure as failed with this message.
 */
export class RefusedRequestsError extends Error {
  constructor(what: string, detail: string) {
    super(`${what}: ${detail}`);
    this.name = "RefusedRequestsError";
  }
}

/** "429 x 120, 503 x 2" from autocannon's per-status counts. */
function nonSuccessStatuses(result: autocannon.Result): string {
  const stats = (result as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  return Object.entries(stats)
    .filter(([status]) => !status.startsWith("2"))
    .map(([status, { count }]) => `${status} x ${count}`)
    .join(", ");
}

/** One request like the load's, to show what a refused request was answered (the first error's body). */
async function sampleAnswer(options: HammerOptions): Promise<string> {
  try {
    const response = await fetch(options.url, {
      method: options.method ?? "GET",
      headers: options.headers ?? {},
      ...(options.body !== undefined ? { body: options.body } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    return `a request sent after it: ${response.status} ${(await response.text()).slice(0, 300)}`;
  } catch (error) {
    return `a request sent after it failed: ${(error as Error).message}`;
  }
}

/** Throws RefusedRequestsError unless every request of the run got a 2xx answer. */
async function requireAllAnswered(options: HammerOptions, result: autocannon.Result, phase: string): Promise<void> {
  if (result.non2xx === 0 && result.errors === 0 && result.timeouts === 0) return;
  const statuses = nonSuccessStatuses(result);
  throw new RefusedRequestsError(
    `${options.method ?? "GET"} ${new URL(options.url).pathname} (${phase})`,
    `${result.non2xx} non-2xx${statuses ? ` (${statuses})` : ""}, ${result.errors} errors, ${result.timeouts} timeouts of ${result.requests.total + result.errors}; ${await sampleAnswer(options)}`,
  );
}

const autocannonCli = createRequire(import.meta.url).resolve("autocannon/autocannon.js");

async function once(options: HammerOptions, seconds: number): Promise<autocannon.Result> {
  const perClient = options.requestsPerClient;
  if (perClient !== undefined && options.inChildProcess) throw new Error("requestsPerClient needs the in-process autocannon");
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
    ...(perClient !== undefined ? { requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, "x-forwarded-for": clientAddress(perClient) } }) }] } : {}),
    ...(options.body !== undefined ? { body: options.body } : {}),
    connections: options.connections,
    duration: seconds,
    ...(options.maxRequests ? { amount: options.maxRequests } : {}),
    timeout: 10,
  });
}

/**
 * Warm-up then one measured autocannon run. Any refused or failed request, in the warm-up too, throws
 * RefusedRequestsError unless `allowFailures` (a receiver's raw capacity, say, where a refusal is data).
 */
export async function hammer(options: HammerOptions & { allowFailures?: boolean }): Promise<HammerResult> {
  if (options.warmupSeconds > 0) {
    const warmup = await once(options, options.warmupSeconds);
    if (!options.allowFailures) await requireAllAnswered(options, warmup, "warm-up");
  }
  const result = await once(options, options.durationSeconds);
  if (!options.allowFailures) await requireAllAnswered(options, result, "measured run");
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
 * a failure (not in the latencies); three failures in a row stop its worker. A figure that reports
 * the result as a number calls `requireNoFailures` on it first.
 */
export async function closedLoop(options: ClosedLoopOptions, unit: (worker: number, index: number) => Promise<void>): Promise<ClosedLoopResult> {
  const latencies: number[] = [];
  const errors: string[] = [];
  let failures = 0;
  const warmup = options.warmupUnits ?? 0;
  if (warmup > 0) {
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, worker) => {
        for (let i = 0; i < warmup; i += 1) {
          await unit(worker, -1 - i).catch((error: Error) => {
            failures += 1;
            if (errors.length < 5) errors.push(`warm-up: ${error.message.slice(0, 300)}`);
          });
        }
      }),
    );
  }
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

/** Throws RefusedRequestsError with the first errors when any unit of the run failed. */
export function requireNoFailures(what: string, result: ClosedLoopResult): void {
  if (result.failures === 0) return;
  throw new RefusedRequestsError(what, `${result.failures} of ${result.failures + result.units} failed; first errors: ${result.firstErrors.join(" | ")}`);
}
