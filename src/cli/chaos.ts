// `npm run chaos [-- --trades N --kills N --seconds S --seed X --faults L ...]` (decisions section 15): many
// concurrent trades along every path while the service and the indexer are SIGKILLed at random moments
// and restarted, and the world around them fails (`--faults`, all by default: PostgreSQL killed, RPC
// faults, interval mining with confirmations, reorganisations, dropped transactions, a tenfold base fee,
// src/cli/chaos/faults.ts); then every order is checked against
// the chain, the indexer, the service's transaction records and the webhook receiver. Prints a progress
// line as it goes, writes bench/results/chaos-<date>.md and .json, and exits 1 when anything is wrong.
// How it works and how to read the report: docs/chaos.md.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { readIndexerHead } from "../sync/indexer-tables.ts";
import { checkRun, settle, type CheckStats, type Violation } from "./chaos/checks.ts";
import { chainClient, driveTrade, StatusPoller, USABLE_WALLETS, WalletLocks, type DriverContext, type Incident, type Partner, type Trade } from "./chaos/driver.ts";
import { startOutside, type Outage } from "./chaos/outside.ts";
import { PATH_NAMES, type PathName } from "./chaos/paths.ts";
import { NEW_HEADS, sleep, startChaosStack, type ChaosStack, type Killable } from "./chaos/stack.ts";
import { renderMarkdown, type ChaosReport } from "./chaos/report.ts";
import { FAULT_NAMES, INTERVAL_MINING, parseFaults, startChainFaults, type ChainFaultCounts } from "./chaos/faults.ts";
import { repoRoot } from "../paths.ts";
import { devAccounts, DEV_ACCOUNT } from "../stack/local-node.ts";


const { values } = parseArgs({
  options: {
    trades: { type: "string", default: "100" },
    kills: { type: "string", default: "100" },
    seconds: { type: "string", default: "900" },
    seed: { type: "string" },
    faults: { type: "string", default: "all" },
    "new-heads": { type: "string", default: "poll" },
    concurrency: { type: "string", default: "40" },
    settle: { type: "string", default: "300" },
    "deposit-timeout": { type: "string", default: "90" },
    "listing-timeout": { type: "string", default: "90" },
    "lock-window": { type: "string", default: "120" },
    "webhook-delays": { type: "string", default: "1,2,4,8" },
    progress: { type: "string", default: "30" },
    out: { type: "string", default: path.join(repoRoot, "bench/results") },
    "keep-db": { type: "boolean", default: false },
    "real-indexer-lock": { type: "boolean", default: false },
    "serialize-wallets": { type: "boolean", default: false },
    // The default now; kept so earlier command lines still run.
    "concurrent-wallets": { type: "boolean", default: true },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  console.log(`npm run chaos -- [options]
  --trades N            trades to run, spread over every path (default 100)
  --kills N             SIGKILLs of the service and the indexer, at least (default 100)
  --seconds S           window over which trades start and kills are spread (default 900)
  --seed X              seed of every random choice (default: random, printed)
  --faults L            faults of the world around the service, comma-separated, or all (default) or none:
                        postgres  the run's own PostgreSQL SIGKILLed and restarted
                        rpc       RPC through two fault proxies (429, 5xx, resets, timeouts, delay, lag, getLogs limit)
                        interval  a block every 1-2 s, CHAIN_CONFIRMATIONS 2, the indexer polling every second
                        reorg     reorganisations within and beyond the confirmations (needs interval)
                        drop      the service's pending transactions dropped from the mempool (needs interval)
                        basefee   the base fee raised tenfold for a while, then back
  --new-heads H         how the indexer learns of new blocks: poll (default, over the RPC URL) or websocket
                        (subscribed to the node's WebSocket, as npm start on the local chain; blocks still
                        fetched through the rpc fault proxies)
  --concurrency N       trades in flight at most (default 40)
  --settle S            longest wait for quiescence after the last trade (default 300)
  --deposit-timeout S   DEPOSIT_TIMEOUT_SECONDS of the service (default 90)
  --listing-timeout S   LISTING_TIMEOUT_SECONDS (default 90)
  --lock-window S       LOCK_WINDOW_SECONDS (default 120)
  --webhook-delays L    WEBHOOK_RETRY_DELAYS_SECONDS (default 1,2,4,8)
  --progress S          seconds between progress lines (default 30)
  --out DIR             where the report goes (default bench/results)
  --keep-db             keep the run's database (its name is printed) for a look afterwards (not with the
                        postgres fault: the run's own server stops at the end)
  --real-indexer-lock   after killing the indexer, wait out Ponder's 25 s schema lock instead of clearing it
  --serialize-wallets   never overlap one sandbox wallet's actions (by default they overlap, exercising the
                        sandbox's per-wallet nonce handling as concurrent clients do; --concurrent-wallets is that default)`);
  process.exit(0);
}

const int = (name: string, value: string | undefined, min: number): number => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min) {
    console.error(`--${name} must be an integer >= ${min}`);
    process.exit(2);
  }
  return parsed;
};
const faults = (() => {
  try {
    return parseFaults(values.faults!);
  } catch (error) {
    console.error(`--faults: ${(error as Error).message}`);
    process.exit(2);
  }
})();
const newHeads = NEW_HEADS.find((value) => value === values["new-heads"]);
if (newHeads === undefined) {
  console.error(`--new-heads must be one of ${NEW_HEADS.join(", ")}`);
  process.exit(2);
}
const options = {
  trades: int("trades", values.trades, 1),
  kills: int("kills", values.kills, 0),
  seconds: int("seconds", values.seconds, 1),
  seed: values.seed ?? String(Math.floor(Math.random() * 2 ** 31)),
  faults: FAULT_NAMES.filter((name) => faults.has(name)),
  newHeads,
  concurrency: int("concurrency", values.concurrency, 1),
  settleSeconds: int("settle", values.settle, 1),
  depositTimeoutSeconds: int("deposit-timeout", values["deposit-timeout"], 10),
  listingTimeoutSeconds: int("listing-timeout", values["listing-timeout"], 10),
  lockWindowSeconds: int("lock-window", values["lock-window"], 10),
  webhookRetryDelaysSeconds: values["webhook-delays"]!.split(",").map((part) => int("webhook-delays", part.trim(), 0)),
  progressSeconds: int("progress", values.progress, 1),
  out: path.resolve(values.out!),
  keepDatabase: values["keep-db"]!,
  realIndexerLock: values["real-indexer-lock"]!,
  serializeWallets: values["serialize-wallets"]!,
};

/** mulberry32: small, seedable, good enough to pick paths and moments reproducibly. */
function seededRandom(seed: string): () => number {
  let state = 0;
  for (const char of seed) state = (Math.imul(state, 31) + char.charCodeAt(0)) | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
// Separate streams, so the kill schedule does not shift when a trade's choices change, and back.
const tradeRandom = seededRandom(`${options.seed}:trades`);
const killRandom = { service: seededRandom(`${options.seed}:kills:service`), indexer: seededRandom(`${options.seed}:kills:indexer`) };
const faultRandom = { rpc: seededRandom(`${options.seed}:faults:rpc`), chain: seededRandom(`${options.seed}:faults:chain`), postgres: seededRandom(`${options.seed}:faults:postgres`) };
const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const runStart = Date.now();
const elapsed = () => Math.round((Date.now() - runStart) / 1000);
const log = (line: string) => console.log(`[chaos +${elapsed()}s] ${line}`);
const ADMIN_TOKEN = `chaos-admin-${Math.random().toString(36).slice(2)}-0123456789`;

const violations: Violation[] = [];
const incidents: Incident[] = [];
const trades: Trade[] = [];
const kills = { service: 0, indexer: 0 };
const earlyKills = { service: 0, indexer: 0 };
const killTimes: { service: number[]; indexer: number[] } = { service: [], indexer: [] };
const restartSeconds: number[] = [];
const crashes: string[] = [];
let maxDriftSeconds = 0;
let stack: ChaosStack | undefined;
let chainFaultCounts: ChainFaultCounts | undefined;
let stats: CheckStats | undefined;
let settled = false;
let setupError: string | undefined;

const logDir = await mkdtemp(path.join(os.tmpdir(), "offramp-chaos-"));
// Ctrl-C: stop the children, the chain and the database (kept with --keep-db), then exit 130.
process.once("SIGINT", () => {
  log("interrupted: stopping the stack");
  void (async () => {
    await stack?.service.kill().catch(() => undefined);
    await stack?.close({ keepDatabase: options.keepDatabase }).catch(() => undefined);
    process.exit(130);
  })();
});
log(`seed ${options.seed}; ${options.trades} trades, ${options.kills} kills over ${options.seconds} s; faults: ${options.faults.join(", ") || "none"}; new heads by ${options.newHeads}; logs in ${logDir}`);
const outside = await startOutside();

try {
  stack = await startChaosStack({
    adminToken: ADMIN_TOKEN,
    logDir,
    log,
    realIndexerLock: options.realIndexerLock,
    faults,
    newHeads: options.newHeads,
    random: faultRandom.rpc,
    serviceEnv: {
      LOG_LEVEL: "warn",
      DEPOSIT_TIMEOUT_SECONDS: String(options.depositTimeoutSeconds),
      LISTING_TIMEOUT_SECONDS: String(options.listingTimeoutSeconds),
      LOCK_WINDOW_SECONDS: String(options.lockWindowSeconds),
      WEBHOOK_RETRY_DELAYS_SECONDS: options.webhookRetryDelaysSeconds.join(","),
      WEBHOOK_TIMEOUT_MS: "5000",
      CEP_URL: outside.cepUrl,
    },
  });
  const running = stack;
  log(`service ${running.serviceUrl} (pid ${running.service.pid}), indexer pid ${running.indexer.pid}`);
  for (const child of [running.service, running.indexer]) {
    child.onCrash = (why) => {
      crashes.push(`+${elapsed()}s ${why}`);
      log(why);
    };
  }

  // Partners through the admin API: two whose endpoints always answer, one whose endpoint fails for
  // 6 s every 25 s (within the retry schedule, so every event still gets through).
  const partners: Partner[] = [];
  for (const [label, flaky] of [["steady-a", false], ["steady-b", false], ["flaky", true]] as const) {
    const response = await fetch(`${running.serviceUrl}/admin/v1/partners`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: `Chaos ${label}`, tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", webhookUrl: outside.webhookUrl(label) }),
    });
    const body = (await response.json()) as { id: string; apiKey: string; webhookSecret: string };
    if (response.status !== 201) throw new Error(`partner ${label}: ${response.status} ${JSON.stringify(body)}`);
    outside.setSecret(label, body.webhookSecret);
    partners.push({ label, id: body.id, apiKey: body.apiKey, webhookSecret: body.webhookSecret, flaky });
  }
  const outages: Outage[] = [];
  for (let from = 5_000; from < (options.seconds + options.settleSeconds + 600) * 1000; from += 25_000) outages.push({ from, to: from + 6_000 });
  outside.setOutages("flaky", outages);

  // The plan: paths dealt round-robin from a seeded shuffle, so every path gets its share.
  const order = [...PATH_NAMES].sort(() => tradeRandom() - 0.5);
  for (let n = 0; n < options.trades; n += 1) {
    const path: PathName = order[n % order.length]!;
    const seller = Math.floor(tradeRandom() * USABLE_WALLETS);
    const buyer = (seller + 1 + Math.floor(tradeRandom() * (USABLE_WALLETS - 1))) % USABLE_WALLETS;
    trades.push({
      n,
      path,
      expected: path,
      partner: pick(tradeRandom, partners),
      ref: `chaos-${options.seed}-${n}`,
      amountUsdc: 10 + Math.floor(tradeRandom() * 240),
      seller,
      buyer,
      disputeBy: tradeRandom() < 0.5 ? "BUYER" : "SELLER",
      startedAt: 0,
      steps: [],
    });
  }

  const publicClient = chainClient(running.chain.rpcUrl);
  const poller = new StatusPoller(running.pool);
  poller.start();
  const ctx: DriverContext = {
    serviceUrl: running.serviceUrl,
    adminToken: ADMIN_TOKEN,
    pool: running.pool,
    outside,
    escrow: running.deployment.escrowAddress,
    publicClient,
    runStart,
    incidents,
    locks: new WalletLocks(),
    poller,
    timing: { depositTimeoutSeconds: options.depositTimeoutSeconds, listingTimeoutSeconds: options.listingTimeoutSeconds, lockWindowSeconds: options.lockWindowSeconds },
    serializeWallets: options.serializeWallets,
  };

  // The killers, one per child: `kills` spread over the window (70 % the service, 30 % the indexer),
  // each at a random moment of its slot, and never before the child has been up 8 s plus a random as much
  // again. Every other service kill is followed by another during the next start-up (migrations, queue set-up, Ponder's
  // crash recovery), a random 0.3 to 3 s after the spawn.
  let stopKiller = false;
  const busy = new Set<Killable>();
  const restart = async (child: Killable) => {
    const began = Date.now();
    for (let attempt = 1; ; attempt += 1) {
      try {
        await child.start();
        restartSeconds.push((Date.now() - began) / 1000);
        return;
      } catch (error) {
        log(`restarting the ${child.name} failed (attempt ${attempt}): ${(error as Error).message.split("\n")[0]}`);
        if (attempt >= 4) {
          violations.push({ kind: "restart-failed", detail: `the ${child.name} did not start again: ${(error as Error).message.slice(0, 500)}` });
          throw error;
        }
        await sleep(2_000);
      }
    }
  };
  const killAndRestart = async (child: Killable) => {
    const random = killRandom[child.name];
    busy.add(child);
    try {
      await child.kill();
      kills[child.name] += 1;
      killTimes[child.name].push(Date.now());
      await sleep(random() * 1_000);
      // (The indexer's process is only known once Ponder is ready, so only the service is killed while starting.)
      if (child.name === "service" && random() < 0.5 && kills.service + kills.indexer < options.kills) {
        // Killed again while starting: start() fails with "exited before it was ready".
        const starting = child.start().catch(() => undefined);
        await sleep(300 + random() * 2_700);
        await child.kill();
        await starting;
        kills[child.name] += 1;
        killTimes[child.name].push(Date.now());
        earlyKills[child.name] += 1;
      }
      await restart(child);
    } finally {
      busy.delete(child);
    }
  };
  const killerFor = async (child: Killable, count: number) => {
    const random = killRandom[child.name];
    const slotMs = (options.seconds * 1000) / Math.max(count, 1);
    // Behind schedule (slow restarts), a child still gets some time up between kills, so trades move on.
    const minimumUpMs = 8_000;
    const began = Date.now();
    let upSince = Date.now();
    for (let slot = 0; kills[child.name] < count && !stopKiller; slot += 1) {
      const at = Math.max(began + (slot + random()) * slotMs, upSince + minimumUpMs * (1 + random()));
      while (Date.now() < at && !stopKiller) await sleep(Math.min(250, at - Date.now()));
      while ((!child.up || busy.has(child)) && !stopKiller) await sleep(100);
      if (stopKiller) break;
      await killAndRestart(child).catch(() => undefined);
      upSince = Date.now();
    }
  };
  const serviceKills = Math.round(options.kills * 0.7);
  const killer = Promise.all([killerFor(running.service, serviceKills), killerFor(running.indexer, options.kills - serviceKills)]);
  // PostgreSQL: killed every 40 to 80 s over the window, down 1 to 5 s before it is started again.
  const postgresKiller = (async () => {
    const postgres = running.postgres;
    if (!postgres) return;
    const random = faultRandom.postgres;
    for (let next = Date.now() + 15_000 + random() * 25_000; ; next = Date.now() + 40_000 + random() * 40_000) {
      while (Date.now() < next && !stopKiller) await sleep(250);
      if (stopKiller) return;
      log(`killing PostgreSQL (SIGKILL to the postmaster)`);
      await postgres.killAndRestart(1_000 + random() * 4_000).catch((error: Error) => {
        violations.push({ kind: "restart-failed", detail: `PostgreSQL did not start again: ${error.message.slice(0, 500)}` });
      });
      log(`PostgreSQL is back after ${postgres.outageSeconds.at(-1)?.toFixed(1)} s`);
    }
  })();
  const chainFaults = startChainFaults({
    rpcUrl: running.chain.rpcUrl,
    faults,
    random: faultRandom.chain,
    confirmations: running.confirmations,
    ownSigners: [devAccounts[DEV_ACCOUNT.service].address, devAccounts[DEV_ACCOUNT.arbiter].address],
    log,
  });
  chainFaultCounts = chainFaults.counts;
  // A child that died on its own (a crash, recorded above) is started again too.
  const supervisor = setInterval(() => {
    for (const child of [running.service, running.indexer]) {
      if (!child.up && !busy.has(child)) {
        busy.add(child);
        void restart(child)
          .catch(() => undefined)
          .finally(() => busy.delete(child));
      }
    }
  }, 2_000);

  // Progress, with the chain clock's lead over the wall clock (a known issue when blocks come faster than one a second).
  const progress = setInterval(() => {
    void (async () => {
      const block = await publicClient.getBlock().catch(() => undefined);
      const drift = block ? Number(block.timestamp) - Date.now() / 1000 : 0;
      maxDriftSeconds = Math.max(maxDriftSeconds, drift);
      const done = trades.filter((trade) => trade.finishedAt !== undefined).length;
      const inFlight = trades.filter((trade) => trade.startedAt > 0 && trade.finishedAt === undefined).length;
      const serverErrors = incidents.filter((incident) => incident.status !== "network").length;
      log(
        `trades ${done}/${trades.length} done, ${inFlight} in flight | kills ${kills.service + kills.indexer}/${options.kills} (service ${kills.service}, indexer ${kills.indexer}) | ` +
          `5xx ${serverErrors}, refused connections ${incidents.length - serverErrors} | chain clock ${drift >= 0 ? "+" : ""}${drift.toFixed(0)} s | webhooks ${outside.deliveries.length}`,
      );
    })();
  }, options.progressSeconds * 1000);

  // Trades start evenly over the window, at most `concurrency` at once.
  const gapMs = (options.seconds * 1000 * 0.8) / options.trades;
  const driving: Promise<void>[] = [];
  for (const trade of trades) {
    while (trades.filter((other) => other.startedAt > 0 && other.finishedAt === undefined).length >= options.concurrency) await sleep(200);
    trade.startedAt = Date.now();
    driving.push(driveTrade(ctx, trade));
    await sleep(gapMs);
  }
  await Promise.all(driving);
  log(`every trade has been driven; ${kills.service + kills.indexer} kills so far`);
  if (kills.service + kills.indexer < options.kills) log(`killing on until ${options.kills} kills`);
  await killer;
  stopKiller = true;
  await postgresKiller;
  await chainFaults.stop();
  clearInterval(supervisor);
  while (busy.size > 0) await sleep(200);
  for (const child of [running.service, running.indexer]) if (!child.up) await restart(child).catch(() => undefined);

  // Quiescence, then the checks.
  const orderIds = trades.flatMap((trade) => (trade.orderId ? [trade.orderId] : []));
  let lastSettleLog = 0;
  // By the tip's hash, not its number: after a reorganisation that kept the chain's height, an indexer still
  // holding the replaced blocks is at the tip's number but not caught up (seen in CI: a reorg while PostgreSQL
  // was down, the checks run before the indexer had reverted the replaced blocks' events).
  const indexerCaughtUp = async () => {
    const head = await readIndexerHead(running.pool, running.indexerSchema);
    return head !== undefined && head.latestBlockHash === (await publicClient.getBlock()).hash;
  };
  settled = await settle(running.pool, orderIds, options.settleSeconds * 1000, indexerCaughtUp, (left) => {
    if (Date.now() - lastSettleLog > options.progressSeconds * 1000) {
      lastSettleLog = Date.now();
      log(`settling: ${left.orders} orders not terminal, ${left.deliveries} deliveries pending, ${left.transactions} transactions unsent, indexer ${left.indexerCaughtUp ? "caught up" : "behind"}`);
    }
  });
  clearInterval(progress);
  poller.stop();
  if (!settled) log(`not quiescent after ${options.settleSeconds} s: checking anyway`);
  const checked = await checkRun({
    pool: running.pool,
    publicClient,
    escrow: running.deployment.escrowAddress,
    fromBlock: BigInt(running.deployment.deploymentBlock),
    indexerSchema: running.indexerSchema,
    trades,
    deliveries: outside.deliveries,
    webhookRetryDelaysSeconds: options.webhookRetryDelaysSeconds,
    serviceKillTimes: killTimes.service,
  });
  violations.push(...checked.violations);
  stats = checked.stats;
  for (const why of crashes) violations.push({ kind: "crash", detail: why });
} catch (error) {
  setupError = (error as Error).stack ?? String(error);
  log(`the run failed: ${setupError}`);
  violations.push({ kind: "harness", detail: (error as Error).message.slice(0, 1000) });
} finally {
  await stack?.service.stop().catch(() => undefined);
  await stack?.indexer.stop().catch(() => undefined);
}

// Known issues other work is fixing, counted from the service's log so the report can tell them apart.
const serviceLog = (() => {
  try {
    return readFileSync(path.join(logDir, "service.log"), "utf8");
  } catch {
    return "";
  }
})();
const knownIssues = {
  nonceTooLow: (serviceLog.match(/nonce too low/gi) ?? []).length,
  depositDeadlinePassed: (serviceLog.match(/DepositDeadlinePassed/g) ?? []).length,
};

/** Ponder's log lines about what changes its tables (reorganisations, restarts, failures), at most 120, in short. */
function indexerStory(file: string, since: number): string[] {
  const told = new Set([
    "Detected reorg in local chain",
    "Reconciled reorg in local chain",
    "Reverted reorged database rows",
    "Reorged block",
    "Encountered unrecoverable reorg",
    "Failed to fetch latest block",
    "Failed to index block",
    "Failed database query",
    "Detected crash recovery",
    "Started backfill indexing",
    "Started live indexing",
    "Finalized block",
    "Fetched missing blocks",
    "Received SIGINT",
  ]);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const lines: string[] = [];
  for (const raw of text.split("\n")) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof record.msg !== "string" || !told.has(record.msg)) continue;
    const { msg, time, level: _level, chain: _chain, chain_id: _chainId, error, ...rest } = record;
    const why = error && typeof error === "object" && "message" in error ? ` (${String((error as { message: unknown }).message).split("\n")[0]})` : "";
    lines.push(`+${Math.round((Number(time) - since) / 1000)}s ${msg} ${JSON.stringify(rest)}${why}`.slice(0, 240));
  }
  return lines.slice(-120);
}

const finishedAt = new Date();
const byPath = Object.fromEntries(
  PATH_NAMES.map((name) => {
    const planned = trades.filter((trade) => trade.path === name);
    return [name, { planned: planned.length, deviated: planned.filter((trade) => trade.expected !== name).length, failed: planned.filter((trade) => trade.failure).length }];
  }),
);
const report: ChaosReport = {
  startedAt: new Date(runStart).toISOString(),
  finishedAt: finishedAt.toISOString(),
  durationSeconds: Math.round((finishedAt.getTime() - runStart) / 1000),
  command: `npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
  code: (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot, encoding: "utf8" }).trim();
    } catch {
      return "unknown";
    }
  })(),
  machine: { cores: os.cpus().length, loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100) },
  options: { ...options, out: path.relative(repoRoot, options.out) || "." },
  trades: {
    total: trades.length,
    started: trades.filter((trade) => trade.startedAt > 0).length,
    byPath,
    flakyPartner: trades.filter((trade) => trade.partner.flaky).length,
    deviations: trades.filter((trade) => trade.deviation).map((trade) => ({ trade: trade.n, path: trade.path, now: trade.expected, why: trade.deviation! })),
    list: trades.map((trade) => ({
      n: trade.n,
      path: trade.path,
      expected: trade.expected,
      partner: trade.partner.label,
      orderId: trade.orderId ?? null,
      escrowOrderId: trade.escrowOrderId ?? null,
      startedAtSeconds: trade.startedAt > 0 ? Math.round((trade.startedAt - runStart) / 100) / 10 : null,
      steps: trade.steps.map((entry) => ({ ...entry, at: Math.round(entry.at / 100) / 10 })),
      ...(trade.deviation ? { deviation: trade.deviation } : {}),
      ...(trade.failure ? { failure: trade.failure } : {}),
    })),
  },
  kills: {
    service: kills.service,
    indexer: kills.indexer,
    total: kills.service + kills.indexer,
    duringStartUp: earlyKills.service + earlyKills.indexer,
    restartSecondsMean: restartSeconds.length ? Math.round((restartSeconds.reduce((a, b) => a + b, 0) / restartSeconds.length) * 10) / 10 : null,
    restartSecondsMax: restartSeconds.length ? Math.round(Math.max(...restartSeconds) * 10) / 10 : null,
  },
  faults: {
    enabled: options.faults,
    postgres: stack?.postgres
      ? {
          kills: stack.postgres.kills,
          outageSecondsMean: stack.postgres.outageSeconds.length ? Math.round((stack.postgres.outageSeconds.reduce((a, b) => a + b, 0) / stack.postgres.outageSeconds.length) * 10) / 10 : null,
          outageSecondsMax: stack.postgres.outageSeconds.length ? Math.round(Math.max(...stack.postgres.outageSeconds) * 10) / 10 : null,
        }
      : null,
    rpc: stack?.rpcFaults ? { endpoints: stack.rpcFaults.proxies.length, counts: stack.rpcFaults.counts() } : null,
    interval: faults.has("interval") ? { blockMs: INTERVAL_MINING.blockMs, confirmations: INTERVAL_MINING.confirmations, indexerPollingMs: INTERVAL_MINING.pollingMs } : null,
    chain: chainFaultCounts ?? null,
  },
  settled,
  maxChainClockLeadSeconds: Math.round(maxDriftSeconds),
  incidents: {
    serverErrors: incidents.filter((incident) => incident.status !== "network").length,
    refusedOrCut: incidents.filter((incident) => incident.status === "network").length,
    serverErrorSamples: incidents.filter((incident) => incident.status !== "network").slice(0, 20),
  },
  knownIssues,
  stats: stats ?? null,
  violations,
  setupError: setupError ?? null,
};

await mkdir(options.out, { recursive: true });
const stamp = finishedAt.toISOString().slice(0, 10);
const base = path.join(options.out, `chaos-${stamp}`);
await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
await writeFile(`${base}.md`, renderMarkdown(report));
log(`wrote ${path.relative(repoRoot, base)}.md and .json`);
if (options.keepDatabase && stack) log(`database kept: ${stack.databaseUrl}`);
await stack?.close({ keepDatabase: options.keepDatabase }).catch((error: Error) => log(`closing the stack: ${error.message}`));
await outside.close();

log(
  `${report.trades.total} trades, ${report.kills.total} kills (service ${kills.service}, indexer ${kills.indexer}), ` +
    `${violations.length} violation(s), ${report.trades.deviations.length} deviation(s), ${report.durationSeconds} s`,
);
for (const violation of violations.slice(0, 30)) log(`VIOLATION ${violation.kind}${violation.trade !== undefined ? ` trade ${violation.trade} ${violation.path} ${violation.orderId ?? ""}` : ""}: ${violation.detail}`);
// The run's logs stay on the machine that ran it; CI keeps only this output. So an indexer violation
// brings Ponder's own account of its reorganisations, restarts and failures with it.
if (violations.some((violation) => violation.kind === "indexer")) {
  for (const line of indexerStory(path.join(logDir, "indexer.log"), runStart)) log(`indexer: ${line}`);
  log(`the service's reconciliation reported the indexer lacking events ${(serviceLog.match(/the indexer lacks escrow events/g) ?? []).length} time(s)`);
}
process.exit(violations.length > 0 ? 1 : 0);
