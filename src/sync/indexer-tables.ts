import type { Hex } from "viem";

// Ponder's tables in the indexer's schema, as the service reads them (the escrow events, the indexed
// head and Ponder's checkpoint). The indexer process itself is started by src/stack/indexer-process.ts.

/** The table names Ponder creates in the indexer's schema. */
export const INDEXER_TABLES = {
  event: "escrow_event",
  head: "indexer_head",
  checkpoint: "_ponder_checkpoint",
  meta: "_ponder_meta",
} as const;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,44}$/;

export function checkSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`indexer schema must match ${SCHEMA_NAME.source} (Ponder's limit is 45 characters): "${schema}"`);
  }
  return schema;
}

/** Qualified name of an indexer table, e.g. qualifiedTable("ponder_offramp", "escrow_event"). */
export function qualifiedTable(schema: string, table: string): string {
  return `"${checkSchema(schema)}"."${table}"`;
}

/**
 * The SQL name the consumer reads escrow events from, e.g. `"ponder_offramp"."escrow_event"`:
 *   SELECT ... FROM <eventTable(schema)> WHERE (block_number, log_index) > ($1, $2)
 *   ORDER BY block_number, log_index
 */
export function eventTable(schema: string): string {
  return qualifiedTable(schema, INDEXER_TABLES.event);
}

/**
 * A statement's subquery for an account's reputation as the chain holds it: the `score` (numeric) of its
 * last ReputationChanged event, which carries the new score at every change, with that event's
 * `block_number` and `block_timestamp`; no row for an account never penalised (the contract's 0).
 * `account` is an SQL expression of the lower-case address. One index probe (escrow_event's reputation
 * index, which holds those events alone).
 */
export function reputationSql(schema: string, account: string): string {
  return `SELECT (e.args ->> 'newScore')::numeric AS score, e.block_number, e.block_timestamp
            FROM ${eventTable(schema)} e
           WHERE e.event_name = 'ReputationChanged' AND (e.args ->> 'account') = ${account}
           ORDER BY e.block_number DESC, e.log_index DESC LIMIT 1`;
}

/** `"<schema>"."_ponder_checkpoint"`: how far Ponder has indexed (see readIndexerHead). */
export function checkpointTable(schema: string): string {
  return qualifiedTable(schema, INDEXER_TABLES.checkpoint);
}

export interface PonderCheckpoint {
  blockTimestamp: bigint;
  chainId: bigint;
  blockNumber: bigint;
  transactionIndex: bigint;
  eventType: number;
  eventIndex: bigint;
}

/** Decodes Ponder's 75-digit checkpoint string (timestamp 10, chain 16, block 16, tx 16, type 1, index 16). */
export function decodeCheckpoint(checkpoint: string): PonderCheckpoint {
  if (!/^\d{75}$/.test(checkpoint)) throw new Error(`not a Ponder checkpoint: "${checkpoint}"`);
  return {
    blockTimestamp: BigInt(checkpoint.slice(0, 10)),
    chainId: BigInt(checkpoint.slice(10, 26)),
    blockNumber: BigInt(checkpoint.slice(26, 42)),
    transactionIndex: BigInt(checkpoint.slice(42, 58)),
    eventType: Number(checkpoint.slice(58, 59)),
    eventIndex: BigInt(checkpoint.slice(59, 75)),
  };
}

export interface IndexerHead {
  chainId: number;
  /**
   * indexer_head: the last block indexed. In the same snapshot, escrow_event rows with block_number at
   * or below it are exactly the chain's escrow events up to it; rows above it may still be missing.
   */
  latestBlock: bigint;
  latestBlockHash: Hex;
  latestTimestamp: bigint;
  /** Ponder's finalized block: rows at or below it never change again. */
  finalizedBlock: bigint;
}

/** Anything with pg's query method (pg.Pool, pg.Client, a pool client). */
export interface Queryable {
  query(sql: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** Whether a query failed because the indexer has not created its tables yet (undefined_table). */
export function indexerTablesMissing(error: unknown): boolean {
  return (error as { code?: string }).code === "42P01";
}

/**
 * Reads indexer_head and Ponder's finalized block; undefined before the first block after start-up
 * has been indexed (or before the schema exists). Read it in the same snapshot as the events (one
 * REPEATABLE READ transaction, or a join), never from Ponder's `/status` or latest_checkpoint: a
 * restart deletes the unfinalized rows without lowering those, while indexer_head goes back with them.
 */
export async function readIndexerHead(db: Queryable, schema: string): Promise<IndexerHead | undefined> {
  let rows: Record<string, unknown>[];
  try {
    ({ rows } = await db.query(
      `SELECT h.chain_id, h.block_number, h.block_hash, h.block_timestamp, c.finalized_checkpoint
         FROM ${qualifiedTable(schema, INDEXER_TABLES.head)} h
         LEFT JOIN ${checkpointTable(schema)} c ON c.chain_id = h.chain_id
        ORDER BY h.chain_id LIMIT 1`,
    ));
  } catch (error) {
    if (indexerTablesMissing(error)) return undefined;
    throw error;
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    chainId: Number(row.chain_id),
    latestBlock: BigInt(String(row.block_number)),
    latestBlockHash: String(row.block_hash) as Hex,
    latestTimestamp: BigInt(String(row.block_timestamp)),
    finalizedBlock:
      typeof row.finalized_checkpoint === "string" ? decodeCheckpoint(row.finalized_checkpoint).blockNumber : 0n,
  };
}

