// The faults of the world around the service that `npm run chaos --faults` causes (decisions 15, issue 22),
// each counted for the report:
// - postgres: the run's own PostgreSQL (an embedded cluster the harness owns) SIGKILLed (the postmaster)
//   and started again on the same port and data;
// - rpc: the service's and Ponder's RPC_URL is two endpoints, each a fault proxy (rpc-proxy.ts) in front of
//   the node: 429s, 5xx, resets, timeouts, delays, eth_getLogs range limits, one of them lagging at times;
// - interval: blocks mined every 1 to 2 s instead of one per transaction, with CHAIN_CONFIRMATIONS above 0;
// - reorg: the last blocks replaced (evm_snapshot / evm_revert, then mining on), within the confirmations
//   and beyond them; the removed transactions not the service's own are sent again in a shuffled order, as
//   a real reorganisation returns them to the mempool (the service's transaction sender does its own);
// - drop: the service's pending transactions removed from the node's mempool (hardhat_dropTransaction);
// - basefee: the base fee held at ten times its value (at least 1 gwei's) for a while, then set back.
import { createTestClient, http as viemHttp, keccak256, publicActions, serializeTransaction, type Address, type Hash, type Hex, type Transaction } from "viem";
import { mkdtemp, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../stack/embedded-postgres.ts";
import { createLogger } from "../../logger.ts";
import { PUBLIC_PROVIDER_FAULTS, startRpcFaultProxy, type FaultName as ProxyFaultName, type RpcFaultProxy } from "./rpc-proxy.ts";

export const FAULT_NAMES = ["postgres", "rpc", "interval", "reorg", "drop", "basefee"] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

/** `--faults`: a comma-separated list of FAULT_NAMES, "all" (the default) or "none". */
export function parseFaults(value: string): Set<FaultName> {
  const trimmed = value.trim();
  if (trimmed === "all") return new Set(FAULT_NAMES);
  if (trimmed === "none") return new Set();
  const chosen = new Set<FaultName>();
  for (const part of trimmed.split(",").map((name) => name.trim())) {
    if (!(FAULT_NAMES as readonly string[]).includes(part)) throw new Error(`unknown fault "${part}" (known: ${FAULT_NAMES.join(", ")}, all, none)`);
    chosen.add(part as FaultName);
  }
  // Reorganisations and drops act on blocks and a mempool that only interval mining has.
  for (const needs of ["reorg", "drop"] as const) if (chosen.has(needs) && !chosen.has("interval")) throw new Error(`--faults ${needs} needs interval (blocks mined at an interval)`);
  return chosen;
}

/** Interval mining as production runs (issue 22): a block every 1 to 2 s, 2 confirmations, the indexer polling every second. */
export const INTERVAL_MINING = { blockMs: [1_000, 2_000] as [number, number], confirmations: 2, pollingMs: 1_000 } as const;

type Random = () => number;
const ONE_GWEI = 1_000_000_000n;
const between = (random: Random, low: number, high: number) => low + random() * (high - low);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The run's own PostgreSQL, which the harness kills and starts again. */
export interface ChaosPostgres {
  /** The server's `postgres` database (the harness creates the run's database on it). */
  serverUrl: string;
  readonly kills: number;
  /** Seconds each outage lasted, from the kill until the server accepted connections again. */
  readonly outageSeconds: number[];
  /** SIGKILL of the postmaster, then a start on the same port and data (retried while the old backends linger). */
  killAndRestart(pauseMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** `port`: a free one of the run's own (not the embedded default 54329, which a concurrent run could take while this one is down). */
export async function startChaosPostgres(port: number, log: (line: string) => void): Promise<ChaosPostgres> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "offramp-chaos-pg-"));
  const logger = createLogger("warn");
  let server: EmbeddedDatabase = await startEmbeddedPostgres(dataDir, logger, { port });
  const serverUrl = Object.assign(new URL(server.url), { pathname: "/postgres" }).toString();
  const outageSeconds: number[] = [];
  let kills = 0;
  log(`own PostgreSQL on port ${port}, data in ${server.databaseDir}`);
  return {
    serverUrl,
    get kills() {
      return kills;
    },
    outageSeconds,
    async killAndRestart(pauseMs) {
      const pid = Number(readFileSync(path.join(server.databaseDir, "postmaster.pid"), "utf8").split("\n")[0]);
      const began = Date.now();
      process.kill(pid, "SIGKILL");
      kills += 1;
      await sleep(pauseMs);
      for (let attempt = 1; ; attempt += 1) {
        try {
          server = await startEmbeddedPostgres(dataDir, logger, { port });
          break;
        } catch (error) {
          // The killed postmaster's backends hold its shared memory until they notice and exit.
          if (attempt >= 30) throw error;
          await sleep(1_000);
        }
      }
      outageSeconds.push((Date.now() - began) / 1000);
    },
    async stop() {
      await server.stop();
      await rm(server.databaseDir, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Two misbehaving endpoints in front of the node; RPC_URL for the service and Ponder lists both. */
export interface RpcFaults {
  rpcUrl: string;
  proxies: RpcFaultProxy[];
  /** Faults caused, summed over the endpoints, by kind. */
  counts(): { requests: number } & Record<ProxyFaultName, number>;
  close(): Promise<void>;
}

export async function startRpcFaults(upstream: string, random: Random): Promise<RpcFaults> {
  // Both err as public providers do; a few requests are held until the client gives up (its 10 s
  // timeout, RPC_TIMEOUT_MS); eth_getLogs is limited to 500 blocks; the second one lags 2 blocks behind
  // for 20 s out of every 60 (set by the timer below).
  const faults = { ...PUBLIC_PROVIDER_FAULTS, timeout: 0.005, timeoutHoldMs: 12_000, maxLogRange: 500 };
  const proxies = [await startRpcFaultProxy({ upstream, faults, random }), await startRpcFaultProxy({ upstream, faults, random })];
  let second = 0;
  const lagger = setInterval(() => {
    second = (second + 1) % 60;
    proxies[1]!.setFaults({ lagBlocks: second < 20 ? 2 : 0 });
  }, 1_000);
  return {
    rpcUrl: proxies.map((proxy) => proxy.url).join(","),
    proxies,
    counts() {
      const sum: Record<string, number> = {};
      for (const proxy of proxies) for (const [kind, n] of Object.entries(proxy.counts)) sum[kind] = (sum[kind] ?? 0) + n;
      return sum as ReturnType<RpcFaults["counts"]>;
    },
    async close() {
      clearInterval(lagger);
      await Promise.all(proxies.map((proxy) => proxy.close()));
    },
  };
}

export interface ChainFaultCounts {
  reorgs: { byDepth: Record<string, number>; withinConfirmations: number; beyondConfirmations: number; transactionsRemoved: number; resent: number; backInMempool: number; resendRefused: number };
  drops: number;
  baseFeeRises: number;
}

/** Sets the node to mine a block every 1 to 2 s instead of one per transaction. */
export async function startIntervalMining(rpcUrl: string): Promise<void> {
  const node = createTestClient({ mode: "hardhat", transport: viemHttp(rpcUrl) });
  await node.setAutomine(false);
  await node.request({ method: "evm_setIntervalMining", params: [INTERVAL_MINING.blockMs] } as never);
}

/** The raw bytes of a mined transaction (same bytes, same hash), so it can be sent again. */
function rawTransaction(tx: Transaction): Hex | undefined {
  // A fetched transaction holds its calldata as `input`; the serializer reads `data`.
  const raw = serializeTransaction({ ...tx, data: tx.input } as never, { r: tx.r, s: tx.s, ...(tx.yParity !== undefined ? { yParity: tx.yParity } : { v: tx.v }) } as never);
  return keccak256(raw) === tx.hash ? raw : undefined;
}

/**
 * Reorganisations, drops and base-fee rises on the node at random moments until stop(). `ownSigners`
 * are the service's signing addresses: their transactions are the ones dropped, and the ones left to the
 * service's sender after a reorganisation.
 */
export function startChainFaults(options: {
  rpcUrl: string;
  faults: Set<FaultName>;
  random: Random;
  confirmations: number;
  ownSigners: Address[];
  log: (line: string) => void;
}): { counts: ChainFaultCounts; stop(): Promise<void> } {
  const { random, log } = options;
  // No cached block number: the reorganisation reads the head right after mining.
  const node = createTestClient({ mode: "hardhat", cacheTime: 0, transport: viemHttp(options.rpcUrl, { timeout: 20_000 }) }).extend(publicActions);
  const own = new Set(options.ownSigners.map((address) => address.toLowerCase()));
  const counts: ChainFaultCounts = {
    reorgs: { byDepth: {}, withinConfirmations: 0, beyondConfirmations: 0, transactionsRemoved: 0, resent: 0, backInMempool: 0, resendRefused: 0 },
    drops: 0,
    baseFeeRises: 0,
  };
  let stopping = false;
  const pause = async (ms: number) => {
    for (const until = Date.now() + ms; Date.now() < until && !stopping; ) await sleep(Math.min(250, until - Date.now()));
  };
  // Reorganisations and base-fee rises both steer the mining: one at a time.
  let steering: Promise<void> = Promise.resolve();
  const steer = (work: () => Promise<void>) => (steering = steering.then(work, work));

  const reorg = async (depth: number) => {
    // The doomed blocks are mined by hand, at the interval's pace, so the depth is exactly `depth`.
    await node.setIntervalMining({ interval: 0 });
    try {
      const head = await node.getBlockNumber();
      const snapshot = await node.snapshot();
      for (let n = 0; n < depth; n += 1) {
        await sleep(between(random, ...INTERVAL_MINING.blockMs));
        await node.mine({ blocks: 1 });
      }
      // The other branch arrives a block interval later, as it does on a real chain: reverting while
      // Ponder is still fetching the last doomed block's logs by its hash stalls it (see below).
      await sleep(between(random, ...INTERVAL_MINING.blockMs));
      const top = await node.getBlockNumber();
      const removed: Transaction[] = [];
      for (let number = head + 1n; number <= top; number += 1n) removed.push(...((await node.getBlock({ blockNumber: number, includeTransactions: true })).transactions as Transaction[]));
      await node.revert({ id: snapshot });
      // The node's revert puts its clock ahead by the time the snapshot lived (the lead grew by every
      // reorganisation's length); the next block at the wall clock's second brings it back, as the node
      // keeps the offset a set timestamp gives.
      const parent = await node.getBlock();
      await node.setNextBlockTimestamp({ timestamp: BigInt(Math.max(Number(parent.timestamp), Math.floor(Date.now() / 1000))) });
      const actual = Number(top - head);
      counts.reorgs.byDepth[actual] = (counts.reorgs.byDepth[actual] ?? 0) + 1;
      if (actual < options.confirmations) counts.reorgs.withinConfirmations += 1;
      else counts.reorgs.beyondConfirmations += 1;
      counts.reorgs.transactionsRemoved += removed.length;
      // Back to the mempool, in another order; a sender's later nonce waits there for its earlier one.
      const others = removed.filter((tx) => !own.has(tx.from.toLowerCase())).sort(() => random() - 0.5);
      for (const tx of others) {
        // Sent before the snapshot, it is back in the node's mempool with it.
        if (await node.getTransaction({ hash: tx.hash }).then(() => true, () => false)) {
          counts.reorgs.backInMempool += 1;
          continue;
        }
        const raw = rawTransaction(tx);
        const refusal = raw ? await node.request({ method: "eth_sendRawTransaction", params: [raw] } as never).then(() => undefined, (error: Error) => error.message.split("\n")[0]) : "its raw bytes could not be rebuilt";
        if (refusal === undefined) counts.reorgs.resent += 1;
        else {
          counts.reorgs.resendRefused += 1;
          log(`reorg: sending ${tx.hash} again was refused: ${refusal}`);
        }
      }
      log(`reorg: ${actual} block(s) after ${head} replaced, ${removed.length} transaction(s) removed, ${others.length} of others sent again`);
    } finally {
      await node.request({ method: "evm_setIntervalMining", params: [INTERVAL_MINING.blockMs] } as never);
    }
  };

  const baseFeeRise = async (holdMs: number) => {
    const block = await node.getBlock();
    const normal = block.baseFeePerGas ?? ONE_GWEI;
    // Mostly empty interval blocks let the local base fee decay to a few wei, below the 1 gwei tip every
    // sender adds: ten times that would strand nothing. The rise is from at least 1 gwei, so a pending
    // transaction's max fee (about the tip plus twice the base fee) falls below it and stays stuck.
    const raised = (normal > ONE_GWEI ? normal : ONE_GWEI) * 10n;
    counts.baseFeeRises += 1;
    log(`base fee raised to ${raised} wei (was ${normal}) for ${Math.round(holdMs / 1000)} s`);
    for (const until = Date.now() + holdMs; Date.now() < until && !stopping; await sleep(300)) {
      await node.setNextBlockBaseFeePerGas({ baseFeePerGas: raised }).catch(() => undefined);
    }
    await node.setNextBlockBaseFeePerGas({ baseFeePerGas: normal }).catch(() => undefined);
  };

  const loops: Promise<void>[] = [];
  if (options.faults.has("reorg")) {
    loops.push(
      (async () => {
        // Alternately within the confirmations (shallower) and beyond them (1 or 2 blocks deeper).
        for (let n = 0; !stopping; n += 1) {
          // Ponder 0.17 spends about 64 s on a block whose logs it is fetching by hash when a reorganisation
          // removes it (eth_getLogs retried 9 times): the reverts wait a block interval (above) and come a
          // minute or two apart, the first two sooner so a short run sees both depths.
          await pause(n < 2 ? between(random, 30_000, 60_000) : between(random, 60_000, 120_000));
          if (stopping) break;
          const depth = n % 2 === 0 ? Math.max(1, options.confirmations - 1) : options.confirmations + 1 + Math.floor(random() * 2);
          await steer(() => reorg(depth)).catch((error: Error) => log(`reorg failed: ${error.message.split("\n")[0]}`));
        }
      })(),
    );
  }
  if (options.faults.has("basefee")) {
    loops.push(
      (async () => {
        while (!stopping) {
          await pause(between(random, 45_000, 90_000));
          if (stopping) break;
          await steer(() => baseFeeRise(between(random, 10_000, 25_000))).catch((error: Error) => log(`base-fee rise failed: ${error.message.split("\n")[0]}`));
        }
      })(),
    );
  }
  if (options.faults.has("drop")) {
    loops.push(
      (async () => {
        // Watches the mempool; now and then drops one of the service's pending transactions.
        let nextDropAt = Date.now() + between(random, 10_000, 30_000);
        while (!stopping) {
          await sleep(150);
          if (Date.now() < nextDropAt) continue;
          const pending = await node.getBlock({ blockTag: "pending", includeTransactions: true }).catch(() => undefined);
          const mine = ((pending?.transactions ?? []) as Transaction[]).filter((tx) => own.has(tx.from.toLowerCase()));
          if (mine.length === 0) continue;
          const victim = mine[Math.floor(random() * mine.length)]!;
          const dropped = await node.dropTransaction({ hash: victim.hash as Hash }).then(() => true, () => false);
          if (dropped) {
            counts.drops += 1;
            log(`dropped the service's pending transaction ${victim.hash} (nonce ${victim.nonce})`);
          }
          nextDropAt = Date.now() + between(random, 10_000, 30_000);
        }
      })(),
    );
  }
  return {
    counts,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      await steering.catch(() => undefined);
    },
  };
}
