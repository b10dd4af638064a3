// The report of `npm run chaos`: bench/results/chaos-<date>.json (everything) and .md (for people).
import type { CheckStats, Violation } from "./checks.ts";
import type { Incident } from "./driver.ts";
import type { ChainFaultCounts } from "./faults.ts";

/** How many of each fault of the world around the service the run caused (`--faults`). */
export interface FaultReport {
  enabled: string[];
  postgres: { kills: number; outageSecondsMean: number | null; outageSecondsMax: number | null } | null;
  /** The fault proxies' counts, summed over the endpoints (requests and each kind of fault). */
  rpc: { endpoints: number; counts: Record<string, number> } | null;
  interval: { blockMs: [number, number]; confirmations: number; indexerPollingMs: number } | null;
  chain: ChainFaultCounts | null;
}

export interface ChaosReport {
  startedAt: string;
  finishedAt: string;
  durationSeconds: number;
  command: string;
  code: string;
  machine: { cores: number; loadAverage: number[] };
  options: Record<string, unknown>;
  trades: {
    total: number;
    started: number;
    byPath: Record<string, { planned: number; deviated: number; failed: number }>;
    flakyPartner: number;
    deviations: { trade: number; path: string; now: string; why: string }[];
    /** Every trade with its steps (seconds since the run started); only in the JSON report. */
    list: Record<string, unknown>[];
  };
  kills: { service: number; indexer: number; total: number; duringStartUp: number; restartSecondsMean: number | null; restartSecondsMax: number | null };
  faults: FaultReport;
  settled: boolean;
  maxChainClockLeadSeconds: number;
  incidents: { serverErrors: number; refusedOrCut: number; serverErrorSamples: Incident[] };
  knownIssues: { nonceTooLow: number; depositDeadlinePassed: number };
  stats: CheckStats | null;
  violations: Violation[];
  setupError: string | null;
}

export function renderMarkdown(report: ChaosReport): string {
  const lines: string[] = [];
  const verdict = report.violations.length === 0 ? "**0 violations**" : `**${report.violations.length} violation(s)**`;
  lines.push(
    `# Chaos run ${report.startedAt.slice(0, 16).replace("T", " ")} UTC`,
    "",
    `${verdict}: ${report.trades.total} trades, ${report.kills.total} SIGKILLs (service ${report.kills.service}, indexer ${report.kills.indexer}), ${report.durationSeconds} s.`,
    "",
    `Command \`${report.command}\`, code ${report.code}, ${report.machine.cores} cores, load average at the end ${report.machine.loadAverage.join(" / ")}. Seed \`${String(report.options.seed)}\` (same seed, same plan and kill schedule).`,
    "",
    `The indexer learned of new blocks ${report.options.newHeads === "websocket" ? "from the node's WebSocket (`--new-heads websocket`)" : "by polling"}.`,
    "",
    "## Trades per path",
    "",
    "| Path | Trades | Deviated (a step came after its window) | Driver could not finish |",
    "|---|---:|---:|---:|",
  );
  for (const [name, row] of Object.entries(report.trades.byPath)) lines.push(`| ${name} | ${row.planned} | ${row.deviated} | ${row.failed} |`);
  lines.push(
    "",
    `${report.trades.flakyPartner} of the trades belong to the partner whose endpoint answers 500 for 6 s out of every 25 s.`,
    "",
    "## Kills",
    "",
    `| Service | Indexer | Total | Of which during a start-up | Restart mean | Restart max |`,
    "|---:|---:|---:|---:|---:|---:|",
    `| ${report.kills.service} | ${report.kills.indexer} | ${report.kills.total} | ${report.kills.duringStartUp} | ${report.kills.restartSecondsMean ?? "-"} s | ${report.kills.restartSecondsMax ?? "-"} s |`,
    "",
    ...renderFaults(report.faults),
    `Quiescent at the end: ${report.settled ? "yes" : "no (checked anyway)"}. Requests the driver retried: ${report.incidents.refusedOrCut} refused or cut connections (service down), ${report.incidents.serverErrors} answers 5xx.`,
    `Chain clock's largest lead over the wall clock: ${report.maxChainClockLeadSeconds} s. Known issues seen in the service log: "nonce too low" ${report.knownIssues.nonceTooLow} time(s), DepositDeadlinePassed ${report.knownIssues.depositDeadlinePassed} time(s).`,
    "",
  );
  if (report.stats) {
    const s = report.stats;
    lines.push(
      "## What was checked",
      "",
      `- ${s.ordersChecked} orders: terminal state as the path expects, no order stuck or past a deadline (timers), the escrow's getOrder status on chain.`,
      `- Escrow events on chain, each counted per order against the path (exactly once each): ${Object.entries(s.chainEvents).map(([name, n]) => `${name} ${n}`).join(", ")}; the indexer's rows agree per order; release and refund hashes on the order are those events' transactions; the service's chain_transactions hold no action MINED twice and none left unsent (${s.revertedTransactions} REVERTED).`,
      `- ${s.webhookEvents} webhook events in the outbox, sequences 1..n per order, the path's event types in order; ${s.deliveriesReceived} deliveries received, every event accepted by the receiver with a valid signature and the outbox's exact body, first attempts in sequence order; ${s.duplicateDeliveries} accepted twice (at-least-once after a kill).`,
      `- Flaky endpoint: ${s.flakyFailures} attempts answered 500, ${s.retriedDeliveries} deliveries retried on the schedule and recorded in webhook_delivery_attempts.`,
      "",
    );
    if (s.warnings.length > 0) lines.push("Warnings:", "", ...s.warnings.slice(0, 50).map((warning) => `- ${warning}`), "");
  }
  lines.push("## Violations", "");
  if (report.violations.length === 0) lines.push("None.", "");
  else {
    lines.push("| Kind | Trade | Path | Order | Detail |", "|---|---:|---|---|---|");
    for (const v of report.violations.slice(0, 200)) lines.push(`| ${v.kind} | ${v.trade ?? ""} | ${v.path ?? ""} | ${v.orderId ?? ""} | ${v.detail.replaceAll("|", "\\|").replaceAll("\n", " ")} |`);
    lines.push("");
  }
  if (report.trades.deviations.length > 0) {
    const known = report.trades.deviations.filter((d) => d.why.includes("known issue")).length;
    lines.push(
      "## Deviations",
      "",
      `Trades whose step came after its window; each was checked against the timer's path instead. ${known} of them because the window had closed on the chain's clock only (the local chain's block timestamps ran ahead of the wall clock: a known issue being fixed).`,
      "",
    );
    for (const d of report.trades.deviations.slice(0, 100)) lines.push(`- trade ${d.trade}: ${d.path} -> ${d.now}: ${d.why}`);
    lines.push("");
  }
  if (report.incidents.serverErrorSamples.length > 0) {
    lines.push("## 5xx answers (first 20)", "");
    for (const i of report.incidents.serverErrorSamples) lines.push(`- +${Math.round(i.at / 1000)} s trade ${i.trade} ${i.step}: ${i.status} ${String(i.detail).replaceAll("\n", " ")}`);
    lines.push("");
  }
  if (report.setupError) lines.push("## Harness error", "", "```", report.setupError, "```", "");
  return `${lines.join("\n")}\n`;
}

function renderFaults(faults: FaultReport): string[] {
  const lines = ["## Faults of the world around the service", ""];
  if (faults.enabled.length === 0) return [...lines, "None (`--faults none`): only the kills above.", ""];
  lines.push(`Enabled: ${faults.enabled.join(", ")}.`, "");
  if (faults.postgres) lines.push(`- PostgreSQL SIGKILLed and restarted: ${faults.postgres.kills} time(s), down ${faults.postgres.outageSecondsMean ?? "-"} s on average, ${faults.postgres.outageSecondsMax ?? "-"} s at most.`);
  if (faults.rpc) {
    const c = faults.rpc.counts;
    lines.push(
      `- RPC through ${faults.rpc.endpoints} fault proxies: ${c.requests ?? 0} requests; 429 ${c.rateLimited ?? 0}, 5xx ${c.serverError ?? 0}, reset before the node ${c.resetBefore ?? 0}, reset after it answered ${c.resetAfter ?? 0}, held until timeout ${c.timeout ?? 0}, delayed ${c.delayed ?? 0}, served from a lagging head ${c.lagged ?? 0}, eth_getLogs range refused ${c.logRangeRefused ?? 0}.`,
    );
  }
  if (faults.interval) lines.push(`- Interval mining: a block every ${faults.interval.blockMs[0] / 1000} to ${faults.interval.blockMs[1] / 1000} s, CHAIN_CONFIRMATIONS ${faults.interval.confirmations}, the indexer's polling interval ${faults.interval.indexerPollingMs / 1000} s.`);
  if (faults.chain) {
    const r = faults.chain.reorgs;
    const depths = Object.entries(r.byDepth).map(([depth, n]) => `depth ${depth}: ${n}`).join(", ") || "none";
    if (faults.enabled.includes("reorg")) {
      lines.push(`- Reorganisations: ${r.withinConfirmations + r.beyondConfirmations} (${r.withinConfirmations} within the confirmations, ${r.beyondConfirmations} beyond; ${depths}); ${r.transactionsRemoved} transactions removed, ${r.resent} of others' sent again by the harness, ${r.backInMempool} back in the mempool with the snapshot, ${r.resendRefused} refused, the service's left to its sender.`);
    }
    if (faults.enabled.includes("drop")) lines.push(`- The service's pending transactions dropped from the mempool: ${faults.chain.drops}.`);
    if (faults.enabled.includes("basefee")) lines.push(`- Base fee raised tenfold for a while: ${faults.chain.baseFeeRises} time(s).`);
  }
  return [...lines, ""];
}
