// Tables the indexer writes. Ponder creates them directly (no views) in the schema given to
// `ponder start --schema`, with snake_case column names; see src/stack/indexer-process.ts for the
// SQL names and how reorganisations show up.
import { index, onchainTable, sql } from "ponder";

/**
 * One row per escrow log, every event kind, in the canonical chain only: Ponder deletes the rows of
 * blocks that leave the canonical chain (reorg) and inserts those of the new blocks. Read in chain
 * order with ORDER BY block_number, log_index.
 */
export const escrowEvent = onchainTable(
  "escrow_event",
  (t) => ({
    /** `<chain id>-<block number>-<log index>`. */
    id: t.text().primaryKey(),
    chainId: t.integer().notNull(),
    blockNumber: t.int8({ mode: "bigint" }).notNull(),
    blockHash: t.hex().notNull(),
    /** Unix seconds. */
    blockTimestamp: t.int8({ mode: "bigint" }).notNull(),
    transactionHash: t.hex().notNull(),
    transactionIndex: t.integer().notNull(),
    /** Position of the log in its block (the chain-order key within a block). */
    logIndex: t.integer().notNull(),
    /** The emitting contract (the escrow). */
    address: t.hex().notNull(),
    /** ABI event name: Deposited, Locked, Released, Refunded, DisputeOpened, DisputeResolved, ... */
    eventName: t.text().notNull(),
    /** bytes32 order id (lower-case hex) for order events, NULL for the others. */
    orderId: t.hex(),
    /** Decoded arguments by name; integers as decimal strings, addresses checksummed. */
    args: t.jsonb().notNull(),
  }),
  (table) => ({
    chainOrderIndex: index().on(table.blockNumber, table.logIndex),
    orderIdIndex: index().on(table.orderId),
    // An account's reputation is its last ReputationChanged event's newScore (src/sync/indexer-tables.ts
    // `reputationSql`): only those events are in this index, so it costs the other inserts nothing.
    reputationIndex: index("escrow_event_reputation_index")
      .on(sql`(args ->> 'account')`, table.blockNumber, table.logIndex)
      .where(sql`event_name = 'ReputationChanged'`),
  }),
);

/**
 * The last block indexed, one row per chain, written in the same transaction as that block's
 * escrow_event rows and reverted with them (reorg, or the revert of unfinalized blocks Ponder does on
 * every restart). So in one snapshot, escrow_event rows with block_number <= indexer_head.block_number
 * are exactly the escrow events of the chain Ponder follows up to that block; rows above it may still
 * be missing. Ponder's own _ponder_checkpoint.latest_checkpoint cannot serve: a restart deletes the
 * unfinalized rows without lowering it. Absent until the first block after start-up is indexed.
 */
export const indexerHead = onchainTable("indexer_head", (t) => ({
  chainId: t.integer().primaryKey(),
  blockNumber: t.int8({ mode: "bigint" }).notNull(),
  blockHash: t.hex().notNull(),
  /** Unix seconds. */
  blockTimestamp: t.int8({ mode: "bigint" }).notNull(),
}));
