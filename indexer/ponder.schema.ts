// Tables the indexer writes. Ponder creates them directly (no views) in the schema given to
// `ponder start --schema`, with snake_case column names; see src/stack/indexer-process.ts for the
// SQL names and how reorganisations show up.
import { index, onchainTable } from "ponder";

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
  }),
);

/** The current on-chain view of each order, for the admin API. */
export const escrowOrder = onchainTable("escrow_order", (t) => ({
  /** bytes32 order id (lower-case hex). */
  orderId: t.hex().primaryKey(),
  /** Active, Locked, Disputed, Released or Refunded (the contract's Status names). */
  status: t.text().notNull(),
  seller: t.hex().notNull(),
  buyer: t.hex(),
  token: t.hex().notNull(),
  /** Escrowed token units. */
  amount: t.bigint().notNull(),
  feeBps: t.integer().notNull(),
  /** From the terms; the zero address means the fee goes back to the seller. */
  feeRecipient: t.hex().notNull(),
  treasuryShareBps: t.integer().notNull(),
  /** Unix seconds. */
  listingExpiresAt: t.int8({ mode: "bigint" }).notNull(),
  /** Seconds. */
  lockWindow: t.int8({ mode: "bigint" }).notNull(),
  /** Unix seconds; NULL until locked. */
  lockExpiresAt: t.int8({ mode: "bigint" }),
  /** Set when a dispute was opened. */
  disputeOpenedBy: t.hex(),
  /** DisputeResolved.outcome (disputeOutcome in src/chain/escrow-abi.ts). */
  disputeOutcome: t.integer(),
  /** Released: what the buyer received, and what the fee recipient and the treasury were credited
   * in the escrow (pull payments: they withdraw it, see the Withdrawn events). */
  buyerAmount: t.bigint(),
  feeAmount: t.bigint(),
  treasuryAmount: t.bigint(),
  /** Released by confirmPayment: the CEP hash (zero hash when released by a dispute). */
  cepHash: t.hex(),
  /** Refunded.reason (refundReason in src/chain/escrow-abi.ts). */
  refundReason: t.integer(),
  depositedBlock: t.int8({ mode: "bigint" }).notNull(),
  depositTransactionHash: t.hex().notNull(),
  updatedBlock: t.int8({ mode: "bigint" }).notNull(),
  /** Unix seconds of the last change. */
  updatedAt: t.int8({ mode: "bigint" }).notNull(),
}));

/** Reputation score per account, as the contract holds it (changes only through disputes). */
export const reputation = onchainTable("reputation", (t) => ({
  account: t.hex().primaryKey(),
  score: t.bigint().notNull(),
  updatedBlock: t.int8({ mode: "bigint" }).notNull(),
  /** Unix seconds of the last change. */
  updatedAt: t.int8({ mode: "bigint" }).notNull(),
}));

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
