// `npm run bench [-- --quick] [-- --only=1,3] [-- --profile=5]`: starts the whole stack (Hardhat node, escrow, Ponder,
// PostgreSQL database, the service in a child process, a webhook receiver), measures the figures of
// decisions section 14, each beside its reference in the same run, and writes bench/results/<date>.md
// and bench/results/latest.json (quick runs: <date>-quick.md and latest-quick.json, not committed),
// each figure against its target (issues 15 and 24). `--profile=<ids>` runs the service under those figures'
// load with `node --cpu-prof` and puts the summary of where its time went in the report.
// Method and meaning of every figure: docs/benchmarks.md.
import path from "node:path";
import { parseArgs } from "node:util";
import type { FigureSpec } from "./figures/context.ts";
import { healthFigure } from "./figures/health.ts";
import { indexerCatchupFigure } from "./figures/indexer-catchup.ts";
import { listOrdersFigure } from "./figures/list-orders.ts";
import { memoryFigure } from "./figures/memory.ts";
import { millionOrdersFigure } from "./figures/million-orders.ts";
import { quoteOrderFigure } from "./figures/quote-order.ts";
import { tradesFigure } from "./figures/trades.ts";
import { twoInstancesFigure } from "./figures/two-instances.ts";
import { webhookLatencyFigure } from "./figures/webhook-latency.ts";
import { webhookThroughputFigure } from "./figures/webhook-throughput.ts";
import { readIndexerHead } from "../src/sync/indexer-tables.ts";
import { rpcClient } from "./lib/chain.ts";
import { repoRoot } from "./lib/child.ts";
import { codeVersion, loadAverage, machineInfo } from "./lib/machine.ts";
import { summarizeProfiles, type ProfileSummary } from "./lib/profile.ts";
import { writeReport, type FigureResult, type RunReport } from "./lib/report.ts";
import { settleDeliveries, startBenchStack, type BenchStack } from "./lib/stack.ts";
import { round } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    profile: { type: "string" },
    out: { type: "string", default: path.join(repoRoot, "bench/results") },
  },
});
const quick = values.quick ?? false;

/**
 * Run order: memory first (it restarts the service on a database without load history), the HTTP
 * figures, then the webhook and chain figures, the 100,000-row bulk insert after every figure it could
 * slow, the indexer catch-up (its own chain), and the million orders (a database of its own, whose load
 * would slow any figure beside it) last.
 */
const ORDER: FigureSpec[] = [
  memoryFigure,
  healthFigure,
  quoteOrderFigure,
  webhookLatencyFigure,
  webhookThroughputFigure,
  tradesFigure,
  twoInstancesFigure,
  listOrdersFigure,
  indexerCatchupFigure,
  millionOrdersFigure,
];
const figureIds = (list: string | undefined) => (list ? new Set(list.split(",").map((part) => Number(part.trim()))) : undefined);
const only = figureIds(values.only);
const profiled = figureIds(values.profile) ?? new Set<number>();
const selected = ORDER.filter((figure) => !only || only.has(figure.id));

const runStart = Date.now();
const log = (line: string) => console.log(`[bench +${((Date.now() - runStart) / 1000).toFixed(1)}s] ${line}`);
/** The whole run's ceiling: beyond it the remaining figures are skipped. */
const RUN_BUDGET_MS = quick ? 6 * 60_000 : 20 * 60_000;

const startedAt = new Date().toISOString();
const code = codeVersion(repoRoot);
const loadStart = loadAverage();
log(`${quick ? "quick" : "full"} run, load average ${loadStart.join(" / ")}, figures ${selected.map((figure) => figure.id).join(", ")}`);

let stack: BenchStack | undefined;
const results: FigureResult[] = [];
const loadSamples: RunReport["loadAverage"]["samples"] = [];
let postgres: string | null = null;
let failed = false;
try {
  stack = await startBenchStack(log);
  // Autovacuum shapes the trade figures: off, the job and order tables' dead rows are not reclaimed during
  // a figure, and the job fetches walk them (docs/benchmarks.md, stop 40); the bench vacuums only between figures.
  const { rows } = await stack.pool.query<{ version: string; autovacuum: string; socket: boolean }>(
    "SELECT current_setting('server_version') AS version, current_setting('autovacuum') AS autovacuum, inet_client_addr() IS NULL AS socket",
  );
  postgres = rows[0] ? `${rows[0].version}, autovacuum ${rows[0].autovacuum}, reached through its ${rows[0].socket ? "Unix-domain socket" : "TCP port"}` : null;
  log(`PostgreSQL ${postgres}`);
  if (rows[0]?.autovacuum === "off") log("PostgreSQL runs with autovacuum off: no dead row is reclaimed during a figure (the bench vacuums between figures), as no production server runs");
  for (const figure of selected) {
    await settleDeliveries(stack, quick ? 15_000 : 90_000, log);
    await settleIndexer(stack, 120_000);
    // On a server whose autovacuum is off (this machine's), a figure would otherwise run on the dead rows
    // of every figure before it, and a figure measured after its reference on more of them than it.
    log(`vacuumed the database in ${(await stack.vacuum()).toFixed(1)} s`);
    const load = loadAverage();
    loadSamples.push({ at: new Date().toISOString(), figure: `#${figure.id}`, load });
    if (Date.now() - runStart > RUN_BUDGET_MS) {
      const target = { text: figure.target.text, met: null };
      results.push({ id: figure.id, key: figure.key, title: figure.title, status: "failed", figure: null, reference: null, extra: [], comparison: null, params: {}, notes: ["Skipped: the run's time budget was spent."], seconds: 0, target });
      continue;
    }
    log(`figure ${figure.id}: ${figure.title} (load ${load[0]})`);
    const profileDir = profiled.has(figure.id) ? path.join(values.out!, "profiles", `${startedAt.replaceAll(":", "-")}-figure-${figure.id}`) : undefined;
    const profileSinceUs = profileDir ? await profileService(stack, profileDir) : undefined;
    const t0 = Date.now();
    try {
      const outcome = await figure.run({ stack, quick, log: (line) => log(`  #${figure.id} ${line}`) });
      const profile = profileDir ? await endProfile(stack, profileDir, profileSinceUs) : undefined;
      results.push({ ...outcome, seconds: round((Date.now() - t0) / 1000, 1)!, target: { text: figure.target.text, met: figure.target.met(outcome) }, ...(profile ? { profile } : {}) });
    } catch (error) {
      if (profileDir) await endProfile(stack, profileDir, profileSinceUs).catch(() => undefined);
      failed = true;
      log(`figure ${figure.id} failed: ${(error as Error).stack ?? String(error)}`);
      results.push({
        id: figure.id,
        key: figure.key,
        title: figure.title,
        status: "failed",
        figure: null,
        reference: null,
        extra: [],
        comparison: null,
        params: {},
        notes: [`Failed: ${(error as Error).message.slice(0, 500)}`],
        seconds: round((Date.now() - t0) / 1000, 1)!,
        target: { text: figure.target.text, met: null },
      });
    }
  }
} catch (error) {
  failed = true;
  log(`stack failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await stack?.close().catch((error: Error) => log(`stack close: ${error.message}`));
}

results.sort((a, b) => a.id - b.id);

/**
 * Restarts the service under `node --cpu-prof` (and every service process the figure starts), so its
 * profile covers the figure's load; returns the moment it was ready (monotonic µs): the summary leaves
 * out the start before it.
 */
async function profileService(bench: BenchStack, dir: string): Promise<number> {
  bench.profileServices(dir);
  await bench.restartService();
  log(`profiling the service into ${path.relative(repoRoot, dir)}`);
  return Number(process.hrtime.bigint() / 1000n);
}

/** Restarts the service without profiling (the profiled process writes its profile as it exits) and sums the profiles. */
async function endProfile(bench: BenchStack, dir: string, sinceUs: number | undefined): Promise<ProfileSummary> {
  bench.profileServices(undefined);
  await bench.restartService();
  // Each process from the figure's start or its own, whichever is later (figure 9 starts a second one).
  const since = (pid: number | undefined) => Math.max(sinceUs ?? 0, (pid === undefined ? undefined : bench.serviceReadyAtUs.get(pid)) ?? 0);
  const summary = await summarizeProfiles([dir], { sinceUs: since });
  log(`profile: ${summary.files.length} file(s), ${(summary.busyMs / 1000).toFixed(1)} s on the CPU; top: ${summary.modules.slice(0, 5).map((row) => `${row.name} ${row.percent}%`).join(", ")}`);
  return summary;
}

/**
 * Waits until the indexer has indexed the chain's head: a figure's blocks (figure 5's 2,000 one-event
 * reference deposits, say, which Ponder indexes at about 50 blocks a second) must not hold up the next
 * figure's events, as they did figure 9's first trades (about 30 s each, so its p95) until 2026-11-26.
 */
async function settleIndexer(bench: BenchStack, budgetMs: number): Promise<void> {
  const started = Date.now();
  const rpc = rpcClient(bench.chain.chainSettings.rpcUrl);
  const chainHead = BigInt(await rpc.call<string>("eth_blockNumber", []));
  let indexed: bigint | undefined;
  for (;;) {
    indexed = (await readIndexerHead(bench.pool, bench.chain.indexerSchema))?.latestBlock;
    if ((indexed !== undefined && indexed >= chainHead) || Date.now() - started > budgetMs) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (indexed === undefined || indexed < chainHead) log(`the indexer is at block ${indexed ?? "none"} of ${chainHead} after waiting ${budgetMs / 1000} s; going on`);
  else if (Date.now() - started > 1_000) log(`waited ${((Date.now() - started) / 1000).toFixed(1)} s for the indexer to reach block ${chainHead}`);
}
const report: RunReport = {
  startedAt,
  finishedAt: new Date().toISOString(),
  mode: quick ? "quick" : "full",
  command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
  code,
  machine: machineInfo(postgres),
  loadAverage: { start: loadStart, end: loadAverage(), samples: loadSamples },
  stack: { services: "Hardhat node (automine; a block every 250 ms while figures 5 and 9 run their trades), escrow + TestUSDC, Ponder 0.17.7, PostgreSQL, service child process (test/support/service-process.ts), webhook receiver" },
  figures: results,
};
if (results.length > 0) {
  const written = await writeReport(values.out!, report);
  log(`wrote ${path.relative(repoRoot, written.markdown)} and ${path.relative(repoRoot, written.json)}`);
}
for (const f of results) {
  const show = (m: FigureResult["figure"]) => (m ? `${m.value} ${m.unit}` : "-");
  log(`#${f.id} ${f.title}: ${show(f.figure)} | reference ${show(f.reference)} | ${f.comparison ?? f.status} | target ${f.target.text}: ${f.target.met === null ? "not measured" : f.target.met ? "met" : "missed"}`);
}
log(`done in ${((Date.now() - runStart) / 1000).toFixed(0)} s, load average ${report.loadAverage.end.join(" / ")}`);
process.exit(failed ? 1 : 0);
