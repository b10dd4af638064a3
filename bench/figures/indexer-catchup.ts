// Figure 6: indexer catch-up in events per second. On a second Hardhat node (so the stack's own
// indexer and service stay idle beside it) the escrow is deployed and K deposits are mined, B per
// block; then a Ponder is started fresh (new schema in the stack's database) from the deployment
// block, and the time is taken until every event is in escrow_event and its indexer_head has reached
// the last block. Reference: eth_getLogs for the same address and block range on the same node.
import { readdirSync, readFileSync } from "node:fs";
import { startLocalChain } from "../../src/stack/local-node.ts";
import { deployLocal } from "../../src/stack/deploy.ts";
import { createEscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { startIndexer, type IndexerLogger } from "../../src/stack/indexer-process.ts";
import { eventTable, readIndexerHead } from "../../src/sync/indexer-tables.ts";
import { escrowIndexerOptions } from "../../test/support/chain-stack.ts";
import { benchTerms, depositCall, fundedSeller, GAS, rpcClient } from "../lib/chain.ts";
import { cpuSeconds } from "../lib/child.ts";
import { cpuSharesMeasure, measureCpuShares, type CpuShares } from "../lib/cpu-shares.ts";
import { median, nowMs, round } from "../lib/stats.ts";
import { meets, sleep, ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

/** Escrow events per block: a busy L2 block holds 50 or more (decisions 14); each block's count is checked. */
const PER_BLOCK = 64;
/** Empty blocks mined after the events, so every event is below Ponder's finality depth (30 on 31337) and goes through the backfill. */
const TAIL_BLOCKS = 32;

/** The pid of the Ponder process indexing `schema` (its command line carries `--schema <schema>`), if running. */
function ponderPid(schema: string): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(`--schema\0${schema}\0`)) return Number(entry);
    } catch {
      // the process ended while the list was read
    }
  }
  return undefined;
}

/**
 * Ponder's own account of the catch-up, from its Prometheus /metrics: JSON-RPC requests by method,
 * database time by operation (its ponder_sync inserts and reads, the indexing store's flushes), and
 * the historical pipeline's steps. Summed over the whole run (ms, counts).
 */
async function ponderMetrics(url: string): Promise<{ rpcCalls: Record<string, number>; databaseMs: Record<string, number>; databaseCalls: Record<string, number>; stepsMs: Record<string, number> }> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const rpcCalls: Record<string, number> = {};
  const databaseMs: Record<string, number> = {};
  const databaseCalls: Record<string, number> = {};
  const stepsMs: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const match = /^(\w+)\{([^}]*)\} ([\d.e+-]+)$/.exec(line);
    if (!match) continue;
    const [, name, labels, raw] = match;
    const label = (key: string) => new RegExp(`${key}="([^"]*)"`).exec(labels!)?.[1];
    const value = Number(raw);
    if (name === "ponder_rpc_request_duration_count") rpcCalls[label("method")!] = (rpcCalls[label("method")!] ?? 0) + value;
    else if (name === "ponder_database_method_duration_sum") databaseMs[label("method")!] = round((databaseMs[label("method")!] ?? 0) + value, 0)!;
    else if (name === "ponder_database_method_duration_count") databaseCalls[label("method")!] = (databaseCalls[label("method")!] ?? 0) + value;
    else if (name === "ponder_historical_extract_duration" || name === "ponder_historical_transform_duration") stepsMs[label("step")!] = round(value, 0)!;
  }
  const top = (record: Record<string, number>) => Object.fromEntries(Object.entries(record).sort((a, b) => b[1] - a[1]).slice(0, 8));
  return { rpcCalls, databaseMs: top(databaseMs), databaseCalls: top(databaseCalls), stepsMs };
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const events = quick ? 400 : 4_000;
  const catchUpTimeoutMs = quick ? 90_000 : 300_000;
  const chain = await startLocalChain({ port: 0 });
  try {
    const deployment = await deployLocal({ rpcUrl: chain.rpcUrl });
    const rpc = rpcClient(chain.rpcUrl);
    const settings = { ...stack.chain.chainSettings, rpcUrl: chain.rpcUrl, escrowAddress: deployment.escrowAddress, usdcAddress: deployment.usdcAddress };
    const gateway = createEscrowGateway(settings);
    const seller = await fundedSeller(rpc, deployment.chainId, deployment.usdcAddress, deployment.escrowAddress, BigInt(events) * 10n ** 6n);
    // The deployment's own escrow events (role grants, token allowed...) are indexed too.
    const headNow = `0x${Number.parseInt(await rpc.call<string>("eth_blockNumber"), 16).toString(16)}`;
    const deploymentLogs = (await rpc.call<unknown[]>("eth_getLogs", [{ address: deployment.escrowAddress, fromBlock: `0x${deployment.deploymentBlock.toString(16)}`, toBlock: headNow }])).length;

    // K deposits, B per block: automine off, a batch of signed transactions, then evm_mine.
    const tGen = nowMs();
    await rpc.call("evm_setAutomine", [false]);
    for (let sent = 0; sent < events; sent += PER_BLOCK) {
      const batch: string[] = [];
      for (let i = sent; i < Math.min(events, sent + PER_BLOCK); i += 1) {
        const terms = benchTerms(deployment.usdcAddress, 1_000_000n);
        batch.push(await seller.sign(deployment.escrowAddress, depositCall(terms, await gateway.signTerms(terms)), GAS.deposit));
      }
      await rpc.batch(batch.map((raw) => ({ method: "eth_sendRawTransaction", params: [raw] })));
      await rpc.call("evm_mine", []);
    }
    for (let i = 0; i < TAIL_BLOCKS; i += 1) await rpc.call("evm_mine", []);
    await rpc.call("evm_setAutomine", [true]);
    const lastBlock = Number.parseInt(await rpc.call<string>("eth_blockNumber"), 16);
    const range = [{ address: deployment.escrowAddress, fromBlock: `0x${deployment.deploymentBlock.toString(16)}`, toBlock: `0x${lastBlock.toString(16)}` }];
    log(`generated ${events} deposits in ${round((nowMs() - tGen) / 1000, 1)} s, blocks ${deployment.deploymentBlock}..${lastBlock}`);

    // Reference: the node's eth_getLogs over the same range (3 runs, median); also checks every deposit landed.
    const getLogsMs: number[] = [];
    let logCount = 0;
    for (let i = 0; i < 3; i += 1) {
      const t = nowMs();
      const logs = await rpc.call<unknown[]>("eth_getLogs", range);
      getLogsMs.push(nowMs() - t);
      logCount = logs.length;
    }
    if (logCount !== events + deploymentLogs) throw new Error(`expected ${events + deploymentLogs} escrow logs on the node, found ${logCount} (some deposits reverted?)`);
    // Every block of deposits must hold its whole batch (a block gas limit would silently split it).
    const depositLogs = await rpc.call<{ blockNumber: string }[]>("eth_getLogs", [{ ...range[0], fromBlock: `0x${(Number.parseInt(headNow, 16) + 1).toString(16)}` }]);
    const perBlock = new Map<string, number>();
    for (const entry of depositLogs) perBlock.set(entry.blockNumber, (perBlock.get(entry.blockNumber) ?? 0) + 1);
    const fewest = Math.min(...perBlock.values());
    const fullBlocks = [...perBlock.values()].filter((count) => count >= Math.min(PER_BLOCK, 50)).length;
    if (perBlock.size !== Math.ceil(events / PER_BLOCK) || fullBlocks < perBlock.size - 1) {
      throw new Error(`expected ${Math.ceil(events / PER_BLOCK)} blocks of ${PER_BLOCK} deposits, found ${perBlock.size} blocks (fewest ${fewest} events)`);
    }
    const getLogsSeconds = median(getLogsMs) / 1000;

    // Ponder from scratch: a new schema, timed from the spawn.
    const schema = `bench_idx_${Date.now().toString(36)}`;
    const phases: Record<string, number> = {};
    const t0 = nowMs();
    const logger: IndexerLogger = {
      debug: () => undefined,
      info: (context, message) => {
        if (message && phases[message] === undefined) phases[message] = round(nowMs() - t0, 0)!;
        if (message === "Started live indexing") liveFinalized = (context as { finalized_block?: number }).finalized_block;
        if (message === "Started backfill indexing" && pid === undefined) {
          pid = ponderPid(schema);
          if (pid !== undefined) cpuAtBackfill = cpuSeconds(pid);
          // Where the 2 cores go over the catch-up: Ponder, its PostgreSQL sessions, the node serving its blocks.
          cpuOverCatchUp ??= measureCpuShares(stack.pool, []);
        }
      },
      warn: (context, message) => stopping || log(`ponder warn: ${message} ${JSON.stringify(context).slice(0, 200)}`),
      error: (context, message) => stopping || log(`ponder error: ${message} ${JSON.stringify(context).slice(0, 200)}`),
    };
    let stopping = false;
    let pid: number | undefined;
    let cpuAtBackfill: number | undefined;
    let liveFinalized: number | undefined;
    let cpuAtDone: number | undefined;
    let cpuOverCatchUp: Promise<() => Promise<CpuShares>> | undefined;
    let cpuShares: CpuShares | undefined;
    let done: number | undefined;
    let firstRow: number | undefined;
    let polling = true;
    const table = eventTable(schema);
    const poller = (async () => {
      const deadline = Date.now() + catchUpTimeoutMs;
      while (polling && Date.now() < deadline) {
        try {
          const head = await readIndexerHead(stack.pool, schema);
          const { rows } = await stack.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
          const count = Number(rows[0]!.n);
          if (count > 0 && firstRow === undefined) firstRow = nowMs() - t0;
          if (head && head.latestBlock >= BigInt(lastBlock) && count >= logCount) {
            done = nowMs() - t0;
            if (pid !== undefined) cpuAtDone = cpuSeconds(pid);
            cpuShares = cpuOverCatchUp ? await (await cpuOverCatchUp)() : undefined;
            return;
          }
        } catch {
          // schema or table not created yet
        }
        await sleep(25);
      }
    })();
    const indexer = await startIndexer({
      ...(await escrowIndexerOptions(deployment, chain.rpcUrl, stack.chain.databaseUrl, schema)),
      logger,
      logLevel: "info",
      readyTimeoutMs: catchUpTimeoutMs,
    });
    const ready = nowMs() - t0;
    let metrics: Awaited<ReturnType<typeof ponderMetrics>> | undefined;
    try {
      await poller;
      metrics = await ponderMetrics(indexer.url).catch((error: unknown) => {
        log(`ponder /metrics not read: ${(error as Error).message}`);
        return undefined;
      });
    } finally {
      polling = false;
      stopping = true;
      await indexer.stop();
      await stack.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    }
    if (done === undefined) throw new Error(`the indexer did not reach block ${lastBlock} with ${logCount} events within ${catchUpTimeoutMs} ms`);
    const backfillStart = phases["Started backfill indexing"] ?? phases["Started fetching backfill JSON-RPC data"];
    const backfillEnd = phases["Completed backfill indexing across all chains"] ?? phases["Completed backfill indexing"];
    const liveStart = phases["Started live indexing"];
    const fromBackfill = backfillStart !== undefined ? (done - backfillStart) / 1000 : undefined;
    const total = done / 1000;
    const eventsPerSecond = round(logCount / (fromBackfill ?? total), 0);
    const reference = round(logCount / getLogsSeconds, 0);
    const ponderCpu = cpuAtBackfill !== undefined && cpuAtDone !== undefined ? cpuAtDone - cpuAtBackfill : undefined;
    const perCpuSecond = ponderCpu !== undefined && ponderCpu > 0 ? round(logCount / ponderCpu, 0) : undefined;
    log(`catch-up: Ponder used ${ponderCpu ?? "?"} CPU s from backfill start (${perCpuSecond ?? "?"} events per Ponder CPU-second); JSON-RPC ${JSON.stringify(metrics?.rpcCalls ?? {})}; database ms ${JSON.stringify(metrics?.databaseMs ?? {})}`);
    if (cpuShares) log(`catch-up: CPU by process ${JSON.stringify(cpuSharesMeasure("", cpuShares, logCount / 1000, "thousand events").detail)}`);
    log(`catch-up: ${logCount} events, ${round(total, 2)} s from spawn, ${fromBackfill !== undefined ? round(fromBackfill, 2) : "?"} s from backfill start -> ${eventsPerSecond} events/s; eth_getLogs ${reference} events/s`);
    return {
      id: 6,
      key: "indexer-catchup",
      title: "Indexer catch-up",
      status: "measured",
      figure: {
        label: "Ponder backfill start -> head at last block",
        value: eventsPerSecond,
        unit: "events/s",
        detail: { events: logCount, deposits: events, blocks: lastBlock - deployment.deploymentBlock, seconds: fromBackfill !== undefined ? round(fromBackfill, 2) : null, secondsFromSpawn: round(total, 2), firstRowAtMs: firstRow !== undefined ? round(firstRow, 0) : null, readyAtMs: round(ready, 0) },
      },
      reference: { label: "eth_getLogs, same range, same node", value: reference, unit: "events/s", detail: { events: logCount, medianMs: round(median(getLogsMs), 1), runs: getLogsMs.map((ms) => round(ms, 1)).join(" / ") } },
      extra: [
        ...(ponderCpu !== undefined && perCpuSecond !== undefined
          ? [{ label: "events per CPU-second of the Ponder process, backfill start -> head at last block (what the figure would be if Ponder had a core to itself; PostgreSQL's CPU not counted)", value: perCpuSecond, unit: "events/CPU-s", detail: { cpuSeconds: round(ponderCpu, 2) } }]
          : []),
        ...(cpuShares ? [cpuSharesMeasure("CPU by process over the catch-up, a thousand events (share of all counted)", cpuShares, logCount / 1000, "thousand events")] : []),
        { label: "whole catch-up from process spawn (start-up included)", value: round(logCount / total, 0), unit: "events/s", detail: { seconds: round(total, 2) } },
        ...(backfillStart !== undefined && backfillEnd !== undefined && backfillEnd > backfillStart
          ? [{ label: "backfill alone (Started -> Completed backfill indexing; the last blocks then go through live indexing)", value: round(logCount / ((backfillEnd - backfillStart) / 1000), 0), unit: "events/s", detail: { seconds: round((backfillEnd - backfillStart) / 1000, 2) } }]
          : []),
        ...(liveStart !== undefined
          ? [{ label: "live indexing of the unfinalized last blocks (Started live indexing -> head at last block; Ponder's finality is 30 blocks on 31337)", value: round(done - liveStart, 0), unit: "ms", detail: { blocks: liveFinalized !== undefined ? lastBlock - liveFinalized : null } }]
          : []),
      ],
      comparison: ratio(eventsPerSecond, reference, "eth_getLogs"),
      params: { events, perBlock: PER_BLOCK, blocksWithEvents: perBlock.size, fewestEventsInABlock: fewest, tailBlocks: TAIL_BLOCKS, ponderPhasesMs: phases, ponderRpcCalls: metrics?.rpcCalls ?? null, ponderDatabaseMs: metrics?.databaseMs ?? null, ponderDatabaseCalls: metrics?.databaseCalls ?? null, ponderHistoricalStepsMs: metrics?.stepsMs ?? null },
      notes: [
        `A second Hardhat node with its own escrow deployment; ${events} deposits (one Deposited event each) mined ${PER_BLOCK} per block with automine off (checked: ${perBlock.size} blocks, every one but the last holding ${PER_BLOCK} escrow events), plus the ${deploymentLogs} events of the deployment itself (role grants, token allowance), then ${TAIL_BLOCKS} empty blocks so every event is below the 30-block finality depth Ponder uses on chain 31337 and goes through its backfill (historical) path. The stack's own indexer and service keep running, idle, beside it.`,
        `Ponder phases, ms after spawn: ${Object.entries(phases).map(([message, ms]) => `${message} ${ms}`).join("; ")}.`,
        "The figure is timed from Ponder's \"Started backfill indexing\" log line (start-up, build and schema creation excluded; the whole time from spawn is the extra row) to the moment the bench, polling every 25 ms, sees every row in escrow_event and indexer_head at the last block.",
        "Ponder's CPU time (user + system, /proc/<pid>/stat) from \"Started backfill indexing\" to done is the load-independent measure of its work: the wall-clock figure also counts waiting for the cores the rest of the machine uses. Its JSON-RPC calls by method, database time by operation (ms, summed over concurrent operations) and historical steps come from Ponder's /metrics, read before it is stopped.",
        ...(metrics
          ? [`Ponder's /metrics: JSON-RPC calls ${Object.entries(metrics.rpcCalls).map(([method, n]) => `${method} ${n}`).join(", ")}; database operations (calls, ms summed over concurrent calls) ${Object.entries(metrics.databaseCalls).map(([method, n]) => `${method} ${n} (${metrics!.databaseMs[method] ?? "?"} ms)`).join(", ")}; historical steps ms ${Object.entries(metrics.stepsMs).map(([step, ms]) => `${step} ${ms}`).join(", ")}.`]
          : []),
        "Reference: a single eth_getLogs over the whole range for the escrow address (median of 3); Ponder fetches in its own ranges and also fetches blocks and writes rows, so it cannot exceed this.",
      ],
    };
  } finally {
    await chain.stop();
  }
}

export const indexerCatchupFigure: FigureSpec = {
  id: 6,
  key: "indexer-catchup",
  title: "Indexer catch-up",
  target: { text: ">= 5,000 events/s", met: (o) => meets([o.figure?.value], (eventsPerSecond) => eventsPerSecond >= 5_000) },
  run,
};
