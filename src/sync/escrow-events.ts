import { eventTable, INDEXER_TABLES, qualifiedTable } from "./indexer-tables.ts";
import { disputeOutcome, refundReason } from "../chain/escrow-abi.ts";
import type { Pool, PoolClient } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { DisputeOutcome, OrderEvent, RefundReason } from "../orders/machine.ts";
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
}

const CONSUMER_LOCK = "escrow-event-consumer";
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
 * still delete it (orphaned block) and it is simply never seen. One instance consumes at a time
 * (session advisory lock); the others stand by.
 */
export function createEscrowEventConsumer(options: EscrowEventConsumerOptions) {
  const { pool, ports, logger, indexerSchema, confirmations } = options;
  const table = eventTable(indexerSchema);
  const pollMs = options.pollIntervalMs ?? 250;
  const batchSize = options.batchSize ?? 200;
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
    const { rows } = await tx.query<{ flagged: boolean }>("SELECT is_sanctioned OR is_pep AS flagged FROM buyers WHERE wallet = lower($1)", [wallet]);
    return rows[0]?.flagged ?? false;
  }

  async function applyRow(tx: PoolClient, row: EscrowEventRow): Promise<void> {
    const event = await withLockFacts(tx, toOrderEvent(row));
    if (event && row.order_id) {
      const { rows } = await tx.query<{ id: string }>("SELECT id FROM orders WHERE escrow_order_id = $1", [row.order_id.toLowerCase()]);
      const orderId = rows[0]?.id;
      if (orderId) {
        // Keyed by block hash too: Ponder's id (chain-block-log) repeats on a new local chain or another branch.
        const result = await applyOrderEvent(pool, ports, orderId, event, { chainEventId: `${row.id}:${row.block_hash}`, tx });
        if (result.changed && event.type === "DEPOSIT_CONFIRMED" && options.isSanctioned?.(event.seller)) {
          // The user's own wallet is listed: later quotes and orders answer USER_SANCTIONED.
          await tx.query("UPDATE users SET is_sanctioned = true, updated_at = now() WHERE id = (SELECT user_id FROM orders WHERE id = $1)", [orderId]);
          logger.warn({ orderId, wallet: event.seller }, "seller wallet is on the sanctions list; user flagged");
        }
        if (result.changed && event.type === "LOCKED" && event.sanctionedBuyer) {
          logger.warn({ orderId, wallet: event.buyer }, "buyer wallet is on the sanctions list; order held for review, no release will be sent");
        }
        logger.info({ orderId, chainEvent: row.event_name, block: row.block_number, changed: result.changed, status: result.status }, "escrow event applied");
      } else {
        logger.warn({ escrowOrderId: row.order_id, chainEvent: row.event_name }, "escrow event for an order this service does not know");
      }
    }
  }

  /** Moves the cursor past `row`, in the transaction that applied it. */
  async function advanceCursor(tx: PoolClient, row: EscrowEventRow): Promise<void> {
    await tx.query(
      `INSERT INTO chain_cursor (name, block_number, log_index) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, log_index = EXCLUDED.log_index, updated_at = now()`,
      [indexerSchema, row.block_number, row.log_index],
    );
  }

  /**
   * The next batch of final-enough events, read with the indexer's head and the cursor in one statement,
   * so in one snapshot: Ponder writes a block's rows and its head marker together and reverts them
   * together, so rows at or below the head read here are exactly the chain's events. One round trip.
   */
  async function nextBatch(): Promise<EscrowEventRow[]> {
    try {
      const { rows } = await pool.query<EscrowEventRow>(
        `WITH head AS (SELECT block_number FROM ${qualifiedTable(indexerSchema, INDEXER_TABLES.head)} ORDER BY chain_id LIMIT 1),
              cursor AS (SELECT coalesce(max(block_number), -1) AS block_number, coalesce(max(log_index), -1) AS log_index FROM chain_cursor WHERE name = $1)
         SELECT e.id, e.block_number, e.block_hash, e.block_timestamp, e.transaction_hash, e.log_index, e.event_name, e.order_id, e.args
           FROM ${table} e, head, cursor
          WHERE (e.block_number, e.log_index) > (cursor.block_number, cursor.log_index) AND e.block_number <= head.block_number - $2::int
          ORDER BY e.block_number, e.log_index LIMIT $3`,
        [indexerSchema, confirmations, batchSize],
      );
      return rows;
    } catch (error) {
      if ((error as { code?: string }).code === "42P01") return []; // the indexer has not created its tables yet
      throw error;
    }
  }

  /**
   * Applies the next batch of final-enough events; returns how many were consumed. Up to
   * EVENTS_PER_TRANSACTION events go in one transaction with one cursor write (a busy chain's events
   * then cost one commit, not one each). An event that fails takes its group back with it: the group is
   * then applied one event a transaction, so the events before the failing one stay applied and it
   * alone is retried.
   */
  async function pollOnce(): Promise<number> {
    const rows = await nextBatch();
    for (let start = 0; start < rows.length; start += EVENTS_PER_TRANSACTION) {
      const group = rows.slice(start, start + EVENTS_PER_TRANSACTION);
      try {
        await withTransaction(pool, async (tx) => {
          for (const row of group) await applyRow(tx, row);
          await advanceCursor(tx, group.at(-1)!);
        });
      } catch (error) {
        if (group.length === 1) throw error;
        logger.warn({ err: error, events: group.length }, "escrow event group failed; applying its events one at a time");
        for (const row of group) {
          await withTransaction(pool, async (tx) => {
            await applyRow(tx, row);
            await advanceCursor(tx, row);
          });
        }
      }
    }
    return rows.length;
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
          const consumed = await pollOnce();
          if (consumed > 0) continue;
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
