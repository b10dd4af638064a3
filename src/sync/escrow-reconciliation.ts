// The service's orders against the chain itself, not only against the indexer (decisions 6, 7 and 15).
// The escrow event consumer applies what Ponder delivers; an event can still go missing on the way (the
// full chaos run lost two deposits between Ponder's rows and the consumer during a reorganisation, a
// database kill and an indexer restart at once), or arrive late (Ponder stalls about a minute on each
// removed block it was fetching). Every interval one instance reads the escrow's logs from the chain up to
// the final-enough block seen an interval earlier (so every log considered has had that long to arrive
// through the indexer) and applies those of our orders the service has not applied, in chain order, keyed
// as the indexer's rows of them: whichever comes first applies an event once. This serves every event
// kind: a lost deposit, lock, dispute, release or refund, and one a reorganisation moved to another block.
// The same pass finds what a reorganisation deeper than the confirmations removed while the consumer was
// behind (applied events whose block was replaced; settled transactions of ours whose event never came),
// and audits the indexer's rows against the logs it read.
import { Gauge, type Registry } from "prom-client";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { repeatPass, type RepeatingPass } from "../repeating-pass.ts";
import { registerCountReading, type ChainEscrowEvent, type EscrowEventRow } from "./escrow-events.ts";
import { eventTable, INDEXER_TABLES, indexerTablesMissing, qualifiedTable } from "./indexer-tables.ts";

/** What the reconciliation reads from the chain. */
export interface EscrowLogReader {
  /** The block `CHAIN_CONFIRMATIONS` under the chain's head: what is final enough to act on. */
  finalEnoughBlock(): Promise<bigint>;
  /**
   * The escrow's logs in blocks `from` to `to` (included), as the indexer's rows of them, in chain order,
   * without their block's time (read only for the few applied: blockTimestamp).
   */
  escrowEvents(from: bigint, to: bigint): Promise<ChainEscrowEvent[]>;
  /** A block's time, Unix seconds. */
  blockTimestamp(blockHash: string): Promise<bigint>;
  /** The hash of the canonical block `number`; undefined when the node does not have it (yet). */
  blockHash(number: bigint): Promise<string | undefined>;
  /** Whether the canonical chain holds the transaction's receipt. */
  transactionMined(hash: string): Promise<boolean>;
}

/** The block number of an event key `<chain id>-<block number>-<log index>:<block hash>`. */
const blockOf = (eventKey: string): string => eventKey.split("-")[1]!;

/** Whether an event's block is the chain's at its height now; undefined while the node has no block there. */
type CanonicalCheck = (eventKey: string) => Promise<boolean | undefined>;

/** Blocks re-read below the last pass's end each pass: events a reorganisation moved to other blocks are found. */
export const RECONCILE_OVERLAP_BLOCKS = 128n;
/** Blocks one eth_getLogs asks for at most: within the ranges public providers accept (some 500). */
const LOG_WINDOW_BLOCKS = 500n;
/** The first pass after start comes this soon. */
const FIRST_PASS_MS = 2_000;
/**
 * How long after it settled a transaction of ours whose event is still not applied is looked at again:
 * several passes, and long enough for a slow indexer and a reorganisation to have met it.
 */
const REMOVED_LOOK_BACK_SECONDS = 600;
const REMOVED_LOOK_BACK_INTERVALS = 3;
/** Settled transactions looked at in one pass at most (each one receipt read). */
const REMOVED_BATCH = 100;

export function createEscrowReconciliation(options: {
  pool: Pool;
  chain: EscrowLogReader;
  /** Applies one event to its order in its own transaction; true when it was new to the service. */
  apply: (row: EscrowEventRow) => Promise<boolean>;
  /** Reports applied events whose block left the canonical chain (the consumer's `orphanFromChain`). */
  orphan: (eventIds: string[]) => Promise<number>;
  /** Hands a settled transaction of ours the chain no longer has back to the sender (`transactionRemoved`). */
  transactionRemoved: (removed: { orderId: string; action: string; txHash: string }) => Promise<boolean>;
  logger: Logger;
  /** The indexer's schema: the reconciliation keeps its place per schema, as the consumer its cursor. */
  indexerSchema: string;
  intervalMs: number;
}) {
  const { pool, chain, apply, logger, indexerSchema, intervalMs } = options;
  let recovered = 0;
  let removedTransactions = 0;
  let indexerMissing = 0;
  let passes: RepeatingPass | undefined;

  /**
   * One pass, on one instance at a time (the schema's row locked through it; the others skip). The logs
   * read are those up to the final-enough block seen at least an interval ago (chain_reconciliation),
   * whichever instance saw it, so instances that restart often still reconcile. Returns how many events
   * it applied that the service had not.
   */
  async function reconcileOnce(): Promise<number> {
    const finalEnough = await chain.finalEnoughBlock();
    const client = await pool.connect();
    let applied = 0;
    let committed = false;
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ reconciled_to: string; seen_block: string; seen_at: Date; due: boolean }>(
        "SELECT reconciled_to, seen_block, seen_at, seen_at <= now() - make_interval(secs => $2) AS due FROM chain_reconciliation WHERE indexer_schema = $1 FOR UPDATE SKIP LOCKED",
        [indexerSchema, intervalMs / 1000],
      );
      const place = rows[0];
      if (!place) {
        // Never run on this schema (or another instance holds it): the chain up to here is the indexer's to
        // deliver; reconciled from the next pass on.
        await client.query(
          "INSERT INTO chain_reconciliation (indexer_schema, reconciled_to, seen_block, seen_at) VALUES ($1, $2, $2, now()) ON CONFLICT DO NOTHING",
          [indexerSchema, finalEnough.toString()],
        );
      } else if (place.due) {
        const upTo = BigInt(place.seen_block);
        const reconciledTo = BigInt(place.reconciled_to);
        const from = reconciledTo > RECONCILE_OVERLAP_BLOCKS ? reconciledTo - RECONCILE_OVERLAP_BLOCKS + 1n : 0n;
        const onChain = new Set<string>();
        const canonical = canonicalCheck();
        for (let start = from; start <= upTo; start += LOG_WINDOW_BLOCKS) {
          const end = start + LOG_WINDOW_BLOCKS - 1n < upTo ? start + LOG_WINDOW_BLOCKS - 1n : upTo;
          const events = await chain.escrowEvents(start, end);
          for (const event of events) onChain.add(`${event.id}:${event.block_hash}`);
          for (const event of await missing(events)) {
            const row = { ...event, block_timestamp: (await chain.blockTimestamp(event.block_hash)).toString() };
            if (!(await apply(row))) continue;
            applied++;
            recovered++; // counted as it is committed: the pass may yet fail, the event stays applied
            logger.warn(
              { escrowOrderId: row.order_id, chainEvent: row.event_name, block: row.block_number, txHash: row.transaction_hash },
              "escrow event applied from the chain: the indexer had not delivered it",
            );
          }
        }
        await orphanGone(from, upTo, onChain, canonical);
        await resendRemoved(place.seen_at);
        await auditIndexer(from, upTo, onChain, canonical);
        await client.query(
          "UPDATE chain_reconciliation SET reconciled_to = GREATEST(reconciled_to, $2), seen_block = $3, seen_at = now() WHERE indexer_schema = $1",
          [indexerSchema, upTo.toString(), finalEnough.toString()],
        );
      }
      await client.query("COMMIT");
      committed = true;
    } finally {
      // A pass that failed before its COMMIT ends the lock's transaction. After a COMMIT a ROLLBACK was a
      // round trip for nothing and a warning in the server's log every pass.
      if (!committed) await client.query("ROLLBACK").catch(() => undefined);
      client.release();
    }
    return applied;
  }

  /**
   * Applied events in blocks `from` to `to` not among the logs just read there (`onChain`) whose block the
   * chain has replaced: a reorganisation deeper than the confirmations the consumer has not noticed (it
   * was behind the removed blocks, or the reconciliation had applied them). Each block is asked for by
   * number, so logs a lagging node left out of a read never count as removed.
   */
  async function orphanGone(from: bigint, to: bigint, onChain: Set<string>, canonical: CanonicalCheck): Promise<void> {
    const { rows } = await pool.query<{ event_id: string }>(
      `SELECT event_id FROM applied_chain_events
        WHERE indexer_schema = $1 AND orphaned_at IS NULL AND block_number BETWEEN $2 AND $3`,
      [indexerSchema, from.toString(), to.toString()],
    );
    const gone: string[] = [];
    for (const { event_id: eventId } of rows) {
      if (!onChain.has(eventId) && (await canonical(eventId)) === false) gone.push(eventId);
    }
    if (gone.length > 0) await options.orphan(gone);
  }

  /**
   * Our transactions the sender settled MINED before `seenAt` (so in blocks this pass has read) whose
   * event is still not applied: the chain had no log of them. Each one the chain has no receipt of was
   * removed by a reorganisation while the consumer lagged, which no applied event can report; it is
   * handed back to the sender. Looked at for 10 minutes (at least 3 intervals) after it settled.
   */
  async function resendRemoved(seenAt: Date): Promise<void> {
    const { rows } = await pool.query<{ order_id: string; action: string; tx_hash: string }>(
      `SELECT t.order_id, t.action, t.tx_hash FROM chain_transactions t
        WHERE t.status = 'MINED' AND t.updated_at <= $1 AND t.updated_at > $1::timestamptz - make_interval(secs => $2)
          AND NOT EXISTS (SELECT 1 FROM applied_chain_events a
                           WHERE a.order_id = t.order_id AND a.orphaned_at IS NULL AND a.transaction_hash = t.tx_hash)
        ORDER BY t.updated_at LIMIT ${REMOVED_BATCH}`,
      [seenAt, Math.max(REMOVED_LOOK_BACK_SECONDS, (REMOVED_LOOK_BACK_INTERVALS * intervalMs) / 1000)],
    );
    for (const row of rows) {
      if (await chain.transactionMined(row.tx_hash)) continue;
      if (await options.transactionRemoved({ orderId: row.order_id, action: row.action, txHash: row.tx_hash })) removedTransactions++;
    }
  }

  /**
   * Whether the indexer holds every escrow log the chain has in blocks `from` to `to` (the logs just read,
   * `onChain`) up to its own head, when that head is the chain's block at its height: Ponder keeps a
   * block's rows and its head in one transaction, so on the canonical chain nothing at or below its head
   * may be missing. The orders do not depend on it (this pass applies what the indexer did not deliver),
   * but the admin API reads escrows from those rows, and a missing one means Ponder lost it: the chaos
   * run caught Ponder 0.17 doing so once, around a reorganisation and a database kill. Logged at error and
   * set in offramp_indexer_events_missing; only re-indexing into a new schema brings the rows back.
   */
  async function auditIndexer(from: bigint, to: bigint, onChain: Set<string>, canonical: CanonicalCheck): Promise<void> {
    let row: { head_block: string | null; head_hash: string | null; ids: string[] } | undefined;
    try {
      [row] = (
        await pool.query<{ head_block: string | null; head_hash: string | null; ids: string[] }>(
          `WITH head AS (SELECT block_number, block_hash FROM ${qualifiedTable(indexerSchema, INDEXER_TABLES.head)} ORDER BY chain_id LIMIT 1)
           SELECT (SELECT block_number FROM head) AS head_block, (SELECT block_hash FROM head) AS head_hash,
                  coalesce((SELECT array_agg(e.id || ':' || e.block_hash) FROM ${eventTable(indexerSchema)} e
                             WHERE e.block_number BETWEEN $1 AND LEAST($2::bigint, (SELECT block_number FROM head))), '{}') AS ids`,
          [from.toString(), to.toString()],
        )
      ).rows;
    } catch (error) {
      if (indexerTablesMissing(error)) return;
      throw error;
    }
    if (!row?.head_block || !row.head_hash) return;
    const head = BigInt(row.head_block);
    if ((await chain.blockHash(head))?.toLowerCase() !== row.head_hash.toLowerCase()) return; // mid-reorganisation: next pass
    const indexed = new Set(row.ids);
    // A log read before a reorganisation that came since is no longer the chain's: only the chain's count.
    const missing: string[] = [];
    for (const id of onChain) {
      if (BigInt(blockOf(id)) <= head && !indexed.has(id) && (await canonical(id)) === true) missing.push(id);
    }
    indexerMissing = missing.length;
    if (missing.length > 0) {
      logger.error(
        { indexerSchema, missing: missing.slice(0, 20), count: missing.length, indexedHead: head.toString() },
        "the indexer lacks escrow events the chain has at or below its head: Ponder lost rows; re-index into a new INDEXER_SCHEMA",
      );
    }
  }

  /**
   * Whether an event's block (its key `…:<block hash>`) is the chain's block at that height now; undefined
   * when the node has no such block yet. Each block is asked for once a pass.
   */
  function canonicalCheck(): CanonicalCheck {
    const hashes = new Map<string, Promise<string | undefined>>();
    return async (eventKey) => {
      const block = blockOf(eventKey);
      if (!hashes.has(block)) hashes.set(block, chain.blockHash(BigInt(block)).then((hash) => hash?.toLowerCase()));
      const hash = await hashes.get(block);
      return hash === undefined ? undefined : eventKey.endsWith(`:${hash}`);
    };
  }

  /** The rows of orders of ours whose events the service has not applied, in their order. */
  async function missing(rows: ChainEscrowEvent[]): Promise<ChainEscrowEvent[]> {
    const candidates = rows.filter((row) => row.order_id !== null);
    if (candidates.length === 0) return [];
    const { rows: found } = await pool.query<{ n: number }>(
      `SELECT c.n FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c (event_id, escrow_order_id, n)
        WHERE EXISTS (SELECT 1 FROM orders o WHERE o.escrow_order_id = c.escrow_order_id)
          AND NOT EXISTS (SELECT 1 FROM applied_chain_events a WHERE a.event_id = c.event_id)
        ORDER BY c.n`,
      [candidates.map((row) => `${row.id}:${row.block_hash}`), candidates.map((row) => row.order_id!.toLowerCase())],
    );
    return found.map(({ n }) => candidates[Number(n) - 1]!);
  }

  return {
    reconcileOnce,
    /** Events applied from the chain that the indexer had not delivered, since start. */
    recovered: () => recovered,
    /** Settled transactions of ours found removed from the chain and handed back to the sender, since start. */
    removedTransactions: () => removedTransactions,
    /** Escrow logs of the chain the indexer lacked at the last audit (auditIndexer). */
    indexerMissing: () => indexerMissing,
    start() {
      // The first pass soon: an instance that lives less than an interval still does its part.
      passes ??= repeatPass(reconcileOnce, {
        intervalMs,
        firstDelayMs: Math.min(intervalMs, FIRST_PASS_MS),
        onError: (error) => logger.warn({ err: error }, "escrow reconciliation failed; trying again next interval"),
      });
    },
    async stop() {
      await passes?.stop();
      passes = undefined;
    },
  };
}

export type EscrowReconciliation = ReturnType<typeof createEscrowReconciliation>;

/** offramp_chain_events_recovered_total: escrow events applied from the chain because the indexer had not delivered them. */
export function registerReconciliationMetrics(registry: Registry, reconciliation: Pick<EscrowReconciliation, "recovered" | "removedTransactions" | "indexerMissing">): void {
  new Gauge({
    name: "offramp_indexer_events_missing",
    help: "Escrow logs of the chain, at or below the indexer's head on the canonical chain, that the indexer's rows lacked at the last reconciliation pass (alert on any: re-index)",
    registers: [registry],
    collect() {
      this.set(reconciliation.indexerMissing());
    },
  });
  registerCountReading(
    registry,
    "offramp_chain_events_recovered_total",
    "Escrow events the reconciliation read from the chain and applied because the indexer had not delivered them in time",
    reconciliation.recovered,
  );
  registerCountReading(
    registry,
    "offramp_chain_transactions_removed_total",
    "Settled escrow transactions of ours a reorganisation removed before their event was applied, found by the reconciliation and sent again",
    reconciliation.removedTransactions,
  );
}
