// Whether the indexer follows the chain (decisions 7 and 15, docs/operations.md). Every instance compares
// Ponder's indexed head (indexer_head, moved with every block) with the chain every 15 s and names two
// problems, on /readyz and in the metrics, reported and never enforced (every instance reads the same
// indexer, so making instances unready would stop the API without helping it):
// - behind: the indexed head has not reached the block the chain was at a minute ago (the indexer is down,
//   stalled, or slower than the chain), so deposits, locks and releases wait;
// - off the chain: the indexed head's block is not the chain's block at that height, at two checks in a
//   row with the head unmoved. Ponder rewinds a reorganisation within its finality at its next poll, so
//   this is one deeper than its finality: Ponder 0.17 then stops following the chain while answering
//   ready, and only re-indexing into a new schema recovers it.
import { Gauge, type Registry } from "prom-client";
import type { Hex, PublicClient } from "viem";
import type { Logger } from "../logger.ts";
import { repeatPass } from "../repeating-pass.ts";
import { readIndexerHead, type Queryable } from "./indexer-tables.ts";

/** How often the indexed head is compared with the chain. */
export const INDEXER_FOLLOW_INTERVAL_MS = 15_000;
/** How far back the chain's head is remembered: an indexer this far behind it is "behind". */
export const INDEXER_BEHIND_AFTER_MS = 60_000;

export interface IndexerFollowing {
  checkedAt: string;
  chainHead: string;
  /** The last block the indexer has indexed; null before its first block (or before its schema exists). */
  indexedHead: string | null;
  lagBlocks: number | null;
  behind: boolean;
  offChain: boolean;
  /** What is wrong, for people; null when nothing is. */
  problem: string | null;
}

export interface IndexerFollowWatch {
  /** The last comparison; undefined before the first (or while the chain or the database cannot be read). */
  current(): IndexerFollowing | undefined;
  /** Compares now. */
  check(): Promise<IndexerFollowing>;
  stop(): void;
}

export function watchIndexerFollowing(deps: {
  db: Queryable;
  indexerSchema: string;
  publicClient: Pick<PublicClient, "getBlockNumber" | "getBlock">;
  logger: Logger;
  intervalMs?: number;
  now?: () => number;
}): IndexerFollowWatch {
  const now = deps.now ?? Date.now;
  let chainHeads: { at: number; block: bigint }[] = [];
  let mismatchAt: { block: bigint; hash: Hex } | undefined;
  let reading: IndexerFollowing | undefined;

  const check = async (): Promise<IndexerFollowing> => {
    const [chainHead, indexed] = await Promise.all([deps.publicClient.getBlockNumber({ cacheTime: 0 }), readIndexerHead(deps.db, deps.indexerSchema)]);
    const at = now();
    chainHeads = [...chainHeads.filter((sample) => sample.at > at - INDEXER_BEHIND_AFTER_MS - (deps.intervalMs ?? INDEXER_FOLLOW_INTERVAL_MS) * 2), { at, block: chainHead }];
    const minuteAgo = chainHeads.filter((sample) => sample.at <= at - INDEXER_BEHIND_AFTER_MS).at(-1);

    let offChain = false;
    let problem: string | null = null;
    if (indexed) {
      const chainBlock = indexed.latestBlock <= chainHead ? await deps.publicClient.getBlock({ blockNumber: indexed.latestBlock }) : undefined;
      const mismatch = chainBlock !== undefined && chainBlock.hash !== indexed.latestBlockHash;
      offChain = mismatch && mismatchAt?.block === indexed.latestBlock && mismatchAt.hash === indexed.latestBlockHash;
      mismatchAt = mismatch ? { block: indexed.latestBlock, hash: indexed.latestBlockHash } : undefined;
      if (offChain) {
        problem = `off the chain: block ${indexed.latestBlock} indexed as ${indexed.latestBlockHash}, the chain has ${chainBlock?.hash}; a reorganisation deeper than the indexer's finality: re-index into a new INDEXER_SCHEMA`;
      }
    }
    const behind = minuteAgo !== undefined && (indexed === undefined || indexed.latestBlock < minuteAgo.block);
    if (behind && problem === null) {
      problem = `behind: the chain was at block ${minuteAgo.block} a minute ago, indexed ${indexed ? `up to ${indexed.latestBlock}` : "nothing yet"}`;
    }
    if (problem !== null && problem.split(":")[0] !== reading?.problem?.split(":")[0]) deps.logger.warn({ chainHead: chainHead.toString() }, `indexer ${problem}`);
    reading = {
      checkedAt: new Date(at).toISOString(),
      chainHead: chainHead.toString(),
      indexedHead: indexed ? indexed.latestBlock.toString() : null,
      lagBlocks: indexed ? Number(chainHead > indexed.latestBlock ? chainHead - indexed.latestBlock : 0n) : null,
      behind,
      offChain,
      problem,
    };
    return reading;
  };

  const passes = repeatPass(check, {
    firstDelayMs: 0,
    intervalMs: deps.intervalMs ?? INDEXER_FOLLOW_INTERVAL_MS,
    onError: (error) => {
      reading = undefined;
      deps.logger.warn({ err: error }, "the indexer's head could not be compared with the chain");
    },
  });
  return { current: () => reading, check, stop: () => void passes.stop() };
}

/** The /readyz line: "ok", "unknown" (not compared yet, or uncomparable) or what is wrong. */
export function indexerFollowingReadiness(reading: IndexerFollowing | undefined): string {
  if (reading === undefined) return "unknown";
  return reading.problem ?? "ok";
}

/** Prometheus gauges of the last comparison, in the service's registry (served at /metrics). */
export function registerIndexerFollowingMetrics(registry: Registry, watch: Pick<IndexerFollowWatch, "current">): void {
  const gauge = (name: string, help: string, value: (reading: IndexerFollowing) => number | null) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        const reading = watch.current();
        const measured = reading && value(reading);
        if (measured !== undefined && measured !== null) this.set(measured);
      },
    });
  gauge("offramp_indexer_lag_blocks", "Blocks the indexer's head trails the chain's", (reading) => reading.lagBlocks);
  gauge("offramp_indexer_behind", "1 when the indexer has not reached the block the chain was at a minute ago", (reading) => (reading.behind ? 1 : 0));
  gauge("offramp_indexer_off_chain", "1 when the indexer's head is a block the chain no longer has (a reorganisation deeper than its finality)", (reading) => (reading.offChain ? 1 : 0));
}
