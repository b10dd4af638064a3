import { Counter, type Registry } from "prom-client";
import type { Hex } from "viem";
import { eventTable, INDEXER_TABLES, indexerTablesMissing, qualifiedTable, readIndexerHead, type IndexerHead } from "./indexer-tables.ts";
import { disputeOutcome, refundReason } from "../chain/escrow-abi.ts";
import { newId } from "../domain/ids.ts";
import { allAnswered, prepared, withTransaction, type Pool, type PoolClient } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { DisputeOutcome, OrderEvent, RefundReason, ReplaceableTxHash } from "../orders/machine.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";

export interface EscrowEventRow {
  id: string;
  block_number: string;
  block_hash: string;
  block_timestamp: string;
  transaction_hash: string;
  log_index: number;
  event_name: string;
  order_id: string | null;
  args: Record<string, string | boolean>;
}

/** An event as the consumer's batch reads it, with the service's order of its escrow order id (null: none of ours). */
type BatchRow = EscrowEventRow & { service_order_id: string | null };

/** An escrow log read from the chain as the indexer's row of it, without its block's time (read apart). */
export type ChainEscrowEvent = Omit<EscrowEventRow, "block_timestamp">;

const unixToIso = (seconds: string | boolean | undefined) => new Date(Number(seconds) * 1000).toISOString();
const nameOf = <T extends Record<string, number>>(table: T, value: unknown) =>
  (Object.keys(table) as (keyof T & string)[]).find((key) => String(table[key]) === String(value));

/** An indexed escrow log as the order machine's event; undefined for events no order reacts to. */
export function toOrderEvent(row: EscrowEventRow): OrderEvent | undefined {
  const at = unixToIso(row.block_timestamp);
  const txHash = row.transaction_hash;
  const args = row.args;
  switch (row.event_name) {
    case "Deposited":
      return { type: "DEPOSIT_CONFIRMED", txHash, seller: String(args.seller), listingExpiresAt: unixToIso(args.listingExpiresAt), at };
    case "Locked":
      return { type: "LOCKED", txHash, buyer: String(args.buyer), lockExpiresAt: unixToIso(args.lockExpiresAt), at };
    case "Released":
      return { type: "RELEASED", txHash, at };
    case "Refunded":
      return { type: "REFUNDED", txHash, reason: nameOf(refundReason, args.reason) as RefundReason, at };
    case "DisputeOpened":
      return { type: "DISPUTE_OPENED", txHash, openedBy: String(args.openedBy), byBuyer: args.byBuyer === true || args.byBuyer === "true", at };
    case "DisputeResolved": {
      const outcome = nameOf(disputeOutcome, args.outcome) as DisputeOutcome;
      const newLock = args.newLockExpiresAt !== undefined && String(args.newLockExpiresAt) !== "0" ? unixToIso(args.newLockExpiresAt) : null;
      return { type: "DISPUTE_RESOLVED", txHash, outcome, newLockExpiresAt: newLock, at };
    }
    default:
      return undefined;
  }
}

/**
 * An escrow log read from the chain as the indexer's row of it (indexer/src/escrow.ts `record`): the same
 * id (chain-block-log) and block hash, its bigint arguments as decimal strings; its block's time apart.
 */
export function rowFromChainLog(
  chainId: number,
  log: { blockNumber: bigint; blockHash: Hex; logIndex: number; transactionHash: Hex; eventName: string; args: object },
): ChainEscrowEvent {
  const args = Object.fromEntries(Object.entries(log.args).map(([name, value]) => [name, typeof value === "boolean" ? value : String(value)]));
  return {
    id: `${chainId}-${log.blockNumber}-${log.logIndex}`,
    block_number: log.blockNumber.toString(),
    block_hash: log.blockHash,
    transaction_hash: log.transactionHash,
    log_index: log.logIndex,
    event_name: log.eventName,
    order_id: typeof args.orderId === "string" ? args.orderId.toLowerCase() : null,
    args,
  };
}

export interface EscrowEventConsumerOptions {
  pool: Pool;
  ports: OrderEffectPorts;
  logger: Logger;
  /** The indexer's PostgreSQL schema (Ponder `--schema`). */
  indexerSchema: string;
  /** Events are applied only once this many blocks sit on top of theirs (held until final). */
  confirmations: number;
  /**
   * Fallback poll of escrow_event; default 250 ms. The consumer is woken at once by the notification
   * Ponder sends when it commits a live block (see indexerNotifyChannel), so this only bounds the delay if a
   * notification is missed (e.g. during the backfill, before Ponder installs its notify trigger).
   */
  pollIntervalMs?: number;
  batchSize?: number;
  /** Sanctions screening of the seller wallet a deposit reveals (the seller is our user), and of the buyer's at the lock. */
  isSanctioned?: (address: string) => boolean;
  /** The list entry naming a sanctioned address, for the hold's record. */
  sanctionsEntry?: (address: string) => string | undefined;
  /** The escrow's REFUND_GRACE_SECONDS (read from the contract), recorded with each lock (decisions 19). */
  refundGraceSeconds?: () => Promise<number>;
  /**
   * Queues the sender's step for a stored transaction of ours (in `tx`): a reorganisation deeper than the
   * confirmations removed it after it was settled, so it is watched and its same bytes sent again.
   */
  resendTransaction?: (tx: PoolClient, transactionId: string) => Promise<void>;
}

/** An applied event no longer in the canonical chain (a reorganisation deeper than the confirmations). */
interface OrphanedEvent {
  event_id: string;
  order_id: string;
  block_number: string;
  event_name: string;
  transaction_hash: string;
}

/**
 * The consumer's read of its next batch of final-enough events (nextBatch), with the indexer's head and
 * the cursor, in one statement. Sent unnamed, so PostgreSQL plans it at each call for the tables as they
 * are: prepared, a session kept the generic plan it made while escrow_event was empty (vacuumed, never
 * analyzed), sequential scans, and each read then went through every event ever indexed (18 ms and 1,560
 * buffers a read after 6,000 events in figure 5). It runs once a block or so: its planning costs little.
 */
export function nextEventsQuery(indexerSchema: string, confirmations: number, batchSize: number): { text: string; values: unknown[] } {
  const table = eventTable(indexerSchema);
  return {
    text: `WITH head AS (SELECT block_number FROM ${qualifiedTable(indexerSchema, INDEXER_TABLES.head)} ORDER BY chain_id LIMIT 1),
          saved AS (SELECT block_number, log_index, block_hash FROM chain_cursor WHERE name = $1),
          cursor AS (SELECT coalesce((SELECT block_number FROM saved), -1) AS block_number,
                            coalesce((SELECT log_index FROM saved), -1) AS log_index,
                            (SELECT block_hash FROM saved) AS block_hash),
          judged AS (SELECT cursor.*, cursor.block_hash IS NOT NULL AND cursor.block_number <= head.block_number
                            AND NOT EXISTS (SELECT 1 FROM ${table} k WHERE k.block_number = cursor.block_number
                                            AND k.log_index = cursor.log_index AND k.block_hash = cursor.block_hash) AS lost,
                            head.block_number AS head_block
                       FROM cursor, head)
     SELECT judged.lost AS cursor_lost, judged.block_number AS cursor_block,
            e.id, e.block_number, e.block_hash, e.block_timestamp, e.transaction_hash, e.log_index, e.event_name, e.order_id, e.args,
            -- per event by its unique index, whatever the planner guesses of the batch's size (a join could
            -- scan all the orders)
            (SELECT o.id FROM orders o WHERE o.escrow_order_id = lower(e.order_id)) AS service_order_id
       FROM judged
       LEFT JOIN LATERAL (
         SELECT * FROM ${table} e
          WHERE NOT judged.lost AND (e.block_number, e.log_index) > (judged.block_number, judged.log_index)
            AND e.block_number <= judged.head_block - $2::int
          ORDER BY e.block_number, e.log_index LIMIT $3) e ON true`,
    values: [indexerSchema, confirmations, batchSize],
  };
}

const CONSUMER_LOCK = "escrow-event-consumer";

/** The order's record of each escrow event that the escrow emits once per order. */
const REPLACEABLE_TX_HASH: Record<string, ReplaceableTxHash | undefined> = { Deposited: "escrowTxHash", Released: "releaseTxHash", Refunded: "refundTxHash" };
/** Events applied in one transaction at most: few enough that the order row locks it holds stay brief. */
const EVENTS_PER_TRANSACTION = 50;

/**
 * The channel Ponder (0.17) notifies when it commits a live block, a reorg or a finalization: a
 * statement trigger on its _ponder_checkpoint table, which every such transaction updates, calls
 * pg_notify('<schema>_live_query', <tables touched>) (ponder/src/database/actions.ts
 * createLiveQueryTriggers; its own client's live queries LISTEN to it). Ponder recreates the trigger
 * whenever it starts live indexing, so nothing of ours lives in its schema. The notification is
 * delivered at commit, when the block's escrow_event rows and indexer_head are visible.
 */
export function indexerNotifyChannel(schema: string): string {
  return `${schema}_live_query`;
}

/**
 * Feeds the indexer's escrow events to the order actors in chain order (block number, log index),
 * from a cursor persisted per indexer schema. Each event is applied and the cursor advanced in one
 * transaction, and `applied_chain_events` makes a replayed event change nothing. Reorganisations: an
 * event is applied only when `confirmations` blocks are indexed on top of it; until then Ponder may
 * still delete it (orphaned block) and it is simply never seen. A deeper one, which removes an event
 * already applied, is noticed when the cursor's event is gone from an indexed block: each applied event
 * gone is reported (error log, the order's CHAIN_EVENT_ORPHANED timeline entry, a metric), a transaction
 * of ours among them is handed back to the sender to be sent again, and the cursor goes back to Ponder's
 * finalized block, so the events of the new branch are applied (those already applied change nothing).
 * The order's state is not rolled back: the order machine moves only forward, and the escrow refuses a
 * lock, release or refund of a deposit it does not hold, so nothing is paid against a vanished deposit;
 * the operator decides from the timeline entry. One instance consumes at a time (session advisory lock);
 * the others stand by.
 */
export function createEscrowEventConsumer(options: EscrowEventConsumerOptions) {
  const { pool, ports, logger, indexerSchema, confirmations } = options;
  const table = eventTable(indexerSchema);
  const pollMs = options.pollIntervalMs ?? 250;
  const batchSize = options.batchSize ?? 200;
  let orphanedEvents = 0;
  let running = false;
  let loop: Promise<void> | undefined;
  const stopping = new AbortController();
  // A notification that comes while a batch is being read or applied is kept for the next nap.
  let nudged = false;
  let endNap: (() => void) | undefined;

  /** Waits `ms`, or less if Ponder notifies a new block or the consumer stops. */
  function nap(ms: number): Promise<void> {
    if (nudged || stopping.signal.aborted) {
      nudged = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stopping.signal.removeEventListener("abort", done);
        endNap = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      stopping.signal.addEventListener("abort", done);
      endNap = done;
    });
  }

  function onNotification(): void {
    if (endNap) endNap();
    else nudged = true;
  }

  /**
   * What a deposit or a lock adds besides the chain's facts (decisions 19): the seller's and the buyer's
   * wallet screened against the sanctions list and the buyer's KYC screening (a listed party's order is
   * held), and the escrow's refund grace period.
   */
  async function withLockFacts(tx: PoolClient, event: OrderEvent | undefined): Promise<OrderEvent | undefined> {
    // A deposit from a listed wallet is held for review instead of listed (decisions 19).
    if (event?.type === "DEPOSIT_CONFIRMED" && options.isSanctioned?.(event.seller)) return { ...event, sanctionedSeller: { listEntry: options.sanctionsEntry?.(event.seller) ?? null } };
    if (event?.type !== "LOCKED") return event;
    const locked = { ...event };
    if (options.isSanctioned?.(event.buyer)) locked.sanctionedBuyer = { listEntry: options.sanctionsEntry?.(event.buyer) ?? null };
    else if (await kycFlagged(tx, event.buyer)) locked.sanctionedBuyer = { listEntry: "KYC_SCREENING_MATCH" };
    if (options.refundGraceSeconds) locked.refundGraceSeconds = await options.refundGraceSeconds();
    return locked;
  }

  /** The buyer's KYC screening found a sanctions or PEP match: it is stopped as a listed wallet is. */
  async function kycFlagged(tx: PoolClient, wallet: string): Promise<boolean> {
    const { rows } = await tx.query<{ flagged: boolean }>(prepared("SELECT is_sanctioned OR is_pep AS flagged FROM buyers WHERE wallet = lower($1)", [wallet]));
    return rows[0]?.flagged ?? false;
  }

  /**
   * Events in chain order, then the cursor after the last of them: one cursor write a group, and the jobs
   * the group's transitions queue (timers, deliveries) written together at its end.
   */
  async function applyGroup(tx: PoolClient, rows: BatchRow[]): Promise<void> {
    const gathering = ports.gatheringJobs(tx);
    for (const row of rows) await applyEvent(tx, row, gathering.ports);
    const last = rows.at(-1);
    // The jobs and the cursor do not wait for each other's answers.
    await allAnswered([gathering.flush(), last ? moveCursor(tx, last.block_number, last.log_index, last.block_hash) : Promise.resolve()]);
  }

  /**
   * One event to its order (once: keyed by the indexer's id and the block's hash), the cursor left where it
   * is. Returns whether the event was new to the service (false: applied before, or no order of ours).
   * The order is the one the batch's read found beside the event (`service_order_id`), or else looked up.
   */
  async function applyEvent(tx: PoolClient, row: EscrowEventRow & { service_order_id?: string | null }, effectPorts = ports): Promise<boolean> {
    const event = await withLockFacts(tx, toOrderEvent(row));
    if (!event || !row.order_id) return false;
    const orderId =
      row.service_order_id !== undefined
        ? row.service_order_id
        : (await tx.query<{ id: string }>(prepared("SELECT id FROM orders WHERE escrow_order_id = $1", [row.order_id.toLowerCase()]))).rows[0]?.id;
    if (!orderId) {
      logger.warn({ escrowOrderId: row.order_id, chainEvent: row.event_name }, "escrow event for an order this service does not know");
      return false;
    }
    // Keyed by block hash too: Ponder's id (chain-block-log) repeats on a new local chain or another branch.
    const chainEvent = { id: `${row.id}:${row.block_hash}`, indexerSchema, blockNumber: row.block_number, eventName: row.event_name, txHash: row.transaction_hash };
    const result = await applyOrderEvent(pool, effectPorts, orderId, event, { chainEvent, tx });
    if (!result.replayed && !result.changed) await followReplacedTransaction(tx, orderId, row, effectPorts);
    if (result.changed && event.type === "DEPOSIT_CONFIRMED" && options.isSanctioned?.(event.seller)) {
      // The user's own wallet is listed: later quotes and orders answer USER_SANCTIONED.
      await tx.query("UPDATE users SET is_sanctioned = true, updated_at = now() WHERE id = (SELECT user_id FROM orders WHERE id = $1)", [orderId]);
      logger.warn({ orderId, wallet: event.seller }, "seller wallet is on the sanctions list; user flagged");
    }
    if (result.changed && event.type === "LOCKED" && event.sanctionedBuyer) {
      logger.warn({ orderId, wallet: event.buyer }, "buyer wallet is on the sanctions list; order held for review, no release will be sent");
    }
    logger.info({ orderId, chainEvent: row.event_name, block: row.block_number, changed: result.changed, status: result.status }, "escrow event applied");
    return !result.replayed;
  }

  /**
   * A new event the order did not move on: if a reorganisation removed the order's applied event of the same
   * kind, this one is its replacement on the canonical chain (the escrow deposits, releases and refunds an
   * order once), and the hash the order records follows it.
   */
  async function followReplacedTransaction(tx: PoolClient, orderId: string, row: EscrowEventRow, effectPorts: OrderEffectPorts): Promise<void> {
    const field = REPLACEABLE_TX_HASH[row.event_name];
    if (!field) return;
    const { rows } = await tx.query<{ transaction_hash: string }>(
      `SELECT transaction_hash FROM applied_chain_events
        WHERE order_id = $1 AND event_name = $2 AND orphaned_at IS NOT NULL AND transaction_hash <> $3 ORDER BY orphaned_at DESC LIMIT 1`,
      [orderId, row.event_name, row.transaction_hash],
    );
    const orphaned = rows[0];
    if (!orphaned) return;
    const replaced = await applyOrderEvent(pool, effectPorts, orderId, { type: "CHAIN_TX_REPLACED", field, orphanedTxHash: orphaned.transaction_hash, txHash: row.transaction_hash, at: unixToIso(row.block_timestamp) }, { tx });
    if (replaced.changed) logger.warn({ orderId, chainEvent: row.event_name, orphanedTxHash: orphaned.transaction_hash, txHash: row.transaction_hash }, "an orphaned escrow event is on the chain again under another transaction; the order records the new one");
  }

  async function moveCursor(tx: PoolClient, block: string, logIndex: number, blockHash: string | null): Promise<void> {
    await tx.query(
      prepared(
        `INSERT INTO chain_cursor (name, block_number, log_index, block_hash) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, log_index = EXCLUDED.log_index, block_hash = EXCLUDED.block_hash, updated_at = now()`,
        [indexerSchema, block, logIndex, blockHash],
      ),
    );
  }

  /**
   * The cursor's event is gone from a block Ponder has indexed: a reorganisation removed blocks the
   * consumer had applied. Reports every applied event gone, hands our own removed transactions back to
   * the sender, and moves the cursor back to Ponder's finalized block, all in one transaction.
   */
  async function recoverFromReorg(head: IndexerHead, cursorBlock: string): Promise<void> {
    // Never forward: the cursor's own block is gone, so everything from it on is read again.
    const rewindTo = (head.finalizedBlock < BigInt(cursorBlock) ? head.finalizedBlock : BigInt(cursorBlock) - 1n).toString();
    const found = await withTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ event_id: string }>(
        `SELECT a.event_id FROM applied_chain_events a
          WHERE a.indexer_schema = $1 AND a.orphaned_at IS NULL AND a.block_number > $2
            AND NOT EXISTS (SELECT 1 FROM ${table} e WHERE e.id || ':' || e.block_hash = a.event_id)`,
        [indexerSchema, rewindTo],
      );
      const orphans = await markOrphaned(tx, rows.map((row) => row.event_id));
      await moveCursor(tx, rewindTo, 2 ** 31 - 1, null);
      return orphans;
    });
    logger.error(
      { cursorBlock, rewindTo, orphaned: found.map((o) => ({ orderId: o.order_id, chainEvent: o.event_name, block: o.block_number, txHash: o.transaction_hash })) },
      "reorganisation deeper than CHAIN_CONFIRMATIONS: applied escrow events left the canonical chain; events re-read from the finalized block on",
    );
  }

  /** Marks applied events gone from the canonical chain and reports each once (reportOrphan), in `tx`. */
  async function markOrphaned(tx: PoolClient, eventIds: string[]): Promise<OrphanedEvent[]> {
    const { rows } = await tx.query<OrphanedEvent>(
      `UPDATE applied_chain_events SET orphaned_at = now() WHERE event_id = ANY($1) AND orphaned_at IS NULL
        RETURNING event_id, order_id, block_number, event_name, transaction_hash`,
      [eventIds],
    );
    for (const orphan of rows) await reportOrphan(tx, orphan);
    orphanedEvents += rows.length;
    return rows;
  }

  async function reportOrphan(tx: PoolClient, orphan: OrphanedEvent): Promise<void> {
    const resent = await handBack(tx, orphan.order_id, orphan.transaction_hash);
    await addToTimeline(tx, orphan.order_id, "CHAIN_EVENT_ORPHANED", {
      chainEvent: orphan.event_name,
      txHash: orphan.transaction_hash,
      block: orphan.block_number,
      resentByService: resent !== undefined,
    });
  }

  async function addToTimeline(tx: PoolClient, orderId: string, event: string, data: Record<string, unknown>): Promise<void> {
    await tx.query("INSERT INTO order_timeline (id, order_id, event, data) VALUES ($1, $2, $3, $4)", [newId("evt"), orderId, event, JSON.stringify(data)]);
  }

  /**
   * A transaction of ours the sender settled MINED and a reorganisation removed: back to SENT and queued,
   * so it is watched and its same bytes sent again (same nonce). Its id; undefined when no settled row of
   * ours has that hash, or its bytes are not kept (a replaced fee mined after all: nothing can send it
   * again, and signing anew could double the action; the operator reads the timeline entry).
   */
  async function handBack(tx: PoolClient, orderId: string, txHash: string): Promise<string | undefined> {
    const { rows } = await tx.query<{ id: string }>(
      `UPDATE chain_transactions SET status = 'SENT', updated_at = now()
        WHERE order_id = $1 AND tx_hash = $2 AND status = 'MINED' AND raw_tx IS NOT NULL RETURNING id`,
      [orderId, txHash],
    );
    const resent = rows[0]?.id;
    if (resent && options.resendTransaction) await options.resendTransaction(tx, resent);
    return resent;
  }

  /**
   * The next batch of final-enough events, read with the indexer's head and the cursor in one statement,
   * so in one snapshot (Ponder writes a block's rows and its head marker together and reverts them
   * together: rows at or below the head read here are exactly the chain's events) and one round trip;
   * "reorg" when the cursor's event is gone from a block the indexer has indexed.
   */
  async function nextBatch(): Promise<BatchRow[] | { reorg: IndexerHead; cursorBlock: string }> {
    let rows: (BatchRow & { cursor_lost: boolean; cursor_block: string })[];
    try {
      ({ rows } = await pool.query(nextEventsQuery(indexerSchema, confirmations, batchSize)));
    } catch (error) {
      if (indexerTablesMissing(error)) return [];
      throw error;
    }
    const first = rows[0];
    if (first === undefined) return []; // no block indexed yet
    if (first.cursor_lost) {
      const head = await readIndexerHead(pool, indexerSchema);
      if (head) return { reorg: head, cursorBlock: String(first.cursor_block) };
      return [];
    }
    return rows.filter((row) => row.id !== null);
  }

  /**
   * Applies the next batch of final-enough events; returns whether more may be waiting (a full batch, or
   * a reorganisation's recovery), to be read at once rather than at the next notification. Up to
   * EVENTS_PER_TRANSACTION events go in one transaction (a busy chain's events then cost one commit, not
   * one each). An event that fails takes its group back with it: the group is then applied one event a
   * transaction, so the events before the failing one stay applied and it alone is retried.
   */
  async function pollOnce(): Promise<boolean> {
    const rows = await nextBatch();
    if (!Array.isArray(rows)) {
      await recoverFromReorg(rows.reorg, rows.cursorBlock);
      return true;
    }
    for (let start = 0; start < rows.length; start += EVENTS_PER_TRANSACTION) {
      const group = rows.slice(start, start + EVENTS_PER_TRANSACTION);
      try {
        await withTransaction(pool, (tx) => applyGroup(tx, group));
      } catch (error) {
        if (group.length === 1) throw error;
        logger.warn({ err: error, events: group.length }, "escrow event group failed; applying its events one at a time");
        for (const row of group) await withTransaction(pool, (tx) => applyGroup(tx, [row]));
      }
    }
    return rows.length >= batchSize;
  }

  /**
   * One session's turn: takes the consumer lock on it, listens for Ponder's notifications and consumes
   * until stopped, or until the session is lost (the database killed or restarted), which is thrown.
   */
  async function consumeOnSession(): Promise<void> {
    const lockClient = await pool.connect();
    let lost: Error | undefined;
    const onLost = (error: Error) => {
      lost = error;
      onNotification(); // ends the nap at once
    };
    lockClient.on("error", onLost);
    try {
      while (running && !lost) {
        const { rows } = await lockClient.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [CONSUMER_LOCK]);
        if (rows[0]!.locked) break;
        await nap(2_000);
      }
      lockClient.on("notification", onNotification);
      if (running && !lost) await lockClient.query(`LISTEN "${indexerNotifyChannel(indexerSchema)}"`);
      while (running && !lost) {
        nudged = false;
        try {
          // A batch short of full read every event then final: the next comes with Ponder's notification
          // of a new block (one that came meanwhile ends the nap at once), not from reading again now.
          if (await pollOnce()) continue;
        } catch (error) {
          logger.error({ err: error }, "escrow event consumer failed; retrying");
        }
        await nap(pollMs);
      }
      if (lost) throw lost;
    } finally {
      lockClient.removeListener("notification", onNotification);
      lockClient.removeListener("error", onLost);
      if (!lost) {
        await lockClient.query("UNLISTEN *").catch(() => undefined);
        await lockClient.query("SELECT pg_advisory_unlock_all()").catch(() => undefined);
      }
      // A lost session is closed (its lock and LISTEN went with it), not returned to the pool.
      lockClient.release(lost);
    }
  }

  /** Consumes until stopped; a lost session (or none to be had) is replaced after a pause. */
  async function run(): Promise<void> {
    while (running) {
      try {
        await consumeOnSession();
      } catch (error) {
        logger.error({ err: error }, "escrow event consumer lost its database session; reconnecting");
        await nap(1_000);
      }
    }
  }

  return {
    pollOnce,
    /**
     * Applies an event read from the chain rather than from the indexer (the reconciliation's, when the
     * indexer had not delivered it), in its own transaction; the cursor stays. Keyed as the indexer's row
     * of it would be, so whichever comes first applies it once. True when it was new to the service.
     */
    applyFromChain: (row: EscrowEventRow) => withTransaction(pool, (tx) => applyEvent(tx, row)),
    /**
     * Applied events the reconciliation found gone from the canonical chain (their block replaced) before
     * the consumer noticed: reported and handed back as the consumer's own finding would be. How many.
     */
    orphanFromChain: async (eventIds: string[]): Promise<number> => {
      const found = await withTransaction(pool, (tx) => markOrphaned(tx, eventIds));
      if (found.length > 0) {
        logger.error(
          { orphaned: found.map((o) => ({ orderId: o.order_id, chainEvent: o.event_name, block: o.block_number, txHash: o.transaction_hash })) },
          "reorganisation deeper than CHAIN_CONFIRMATIONS found by the reconciliation: applied escrow events left the canonical chain",
        );
      }
      return found.length;
    },
    /**
     * A settled transaction of ours whose event was never applied and whose receipt the chain no longer has
     * (a reorganisation deeper than the confirmations while the consumer lagged): handed back to the sender,
     * with the order's CHAIN_TRANSACTION_REMOVED timeline entry. Whether it was handed back.
     */
    transactionRemoved: (removed: { orderId: string; action: string; txHash: string }): Promise<boolean> =>
      withTransaction(pool, async (tx) => {
        const { rows } = await tx.query("SELECT 1 FROM chain_transactions WHERE order_id = $1 AND tx_hash = $2 AND status = 'MINED' FOR UPDATE", [removed.orderId, removed.txHash]);
        if (rows.length === 0) return false; // moved on meanwhile (the consumer found its event orphaned, say)
        const resent = await handBack(tx, removed.orderId, removed.txHash);
        await addToTimeline(tx, removed.orderId, "CHAIN_TRANSACTION_REMOVED", { action: removed.action, txHash: removed.txHash, resentByService: resent !== undefined });
        logger.error({ ...removed, resentByService: resent !== undefined }, "a settled escrow transaction of ours left the canonical chain before its event was applied");
        return resent !== undefined;
      }),
    /** Applied events found gone from the canonical chain since start. */
    orphanedEvents: () => orphanedEvents,
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    async stop() {
      running = false;
      stopping.abort();
      await loop;
    },
  };
}

export type EscrowEventConsumer = ReturnType<typeof createEscrowEventConsumer>;

/**
 * A Prometheus counter in `registry` that reads this process's count when scraped (the counts live in the
 * consumer and the reconciliation, which know no metrics library).
 */
export function registerCountReading(registry: Registry, name: string, help: string, count: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(count());
    },
  });
}

/** offramp_chain_orphaned_events_total: applied escrow events a deep reorganisation removed (alert on any). */
export function registerChainReorgMetrics(registry: Registry, consumer: Pick<EscrowEventConsumer, "orphanedEvents">): void {
  registerCountReading(
    registry,
    "offramp_chain_orphaned_events_total",
    "Escrow events the service had applied that a reorganisation deeper than CHAIN_CONFIRMATIONS removed",
    consumer.orphanedEvents,
  );
}
