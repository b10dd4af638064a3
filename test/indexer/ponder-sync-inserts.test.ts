// Ponder's sync store inserts the blocks, transactions, receipts and logs it fetches without drizzle
// building each statement (patches/ponder+0.17.7.patch, sync-store/index.js): drizzle's per-parameter
// checks were a third of Ponder's CPU in a backfill. What reaches PostgreSQL must be what drizzle would
// have sent: the same text and the same parameters, for a batch of any size.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { repoRoot } from "../../src/paths.ts";

type Row = Record<string, unknown>;
interface Query {
  text: string;
  params: unknown[];
}
interface InsertBuilder {
  onConflictDoNothing(options: { target: unknown[] }): { toSQL(): { sql: string; params: unknown[] } };
}
interface Db {
  insert(table: unknown): { values(rows: Row[]): InsertBuilder };
}
interface SyncStore {
  insertBlocks(args: { blocks: Row[]; chainId: number }): Promise<void>;
  insertTransactions(args: { transactions: Row[]; chainId: number }): Promise<void>;
  insertTransactionReceipts(args: { transactionReceipts: Row[]; chainId: number }): Promise<void>;
  insertLogs(args: { logs: Row[]; chainId: number }): Promise<void>;
}

const load = async <T>(file: string) => (await import(pathToFileURL(path.join(repoRoot, "node_modules", file)).href)) as T;
const { createSyncStore } = await load<{ createSyncStore(args: { common: unknown; qb: unknown }): SyncStore }>("ponder/dist/esm/sync-store/index.js");
const schema = await load<Record<"blocks" | "transactions" | "transactionReceipts" | "logs", Record<string, unknown>>>("ponder/dist/esm/sync-store/schema.js");
const encode = await load<Record<string, (args: Record<string, unknown>) => Row>>("ponder/dist/esm/sync-store/encode.js");
const { drizzle } = await load<{ drizzle(client: unknown, config: unknown): Db }>("drizzle-orm/node-postgres/index.js");

const CHAIN_ID = 31337;
const hex = (n: number | bigint) => `0x${n.toString(16)}`;
const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

const block = (n: number) => ({
  number: hex(n),
  timestamp: hex(1_780_000_000 + n),
  hash: word(n),
  parentHash: word(n - 1),
  logsBloom: `0x${"0".repeat(512)}`,
  miner: "0xC014BA5EC014BA5EC014BA5EC014BA5EC014BA5E",
  gasUsed: hex(21_000 * n),
  gasLimit: hex(30_000_000),
  baseFeePerGas: n % 2 ? hex(1_000_000_000n + BigInt(n)) : undefined,
  nonce: "0x0000000000000000",
  mixHash: word(7),
  stateRoot: word(8),
  receiptsRoot: word(9),
  transactionsRoot: word(10),
  sha3Uncles: word(11),
  size: hex(600 + n),
  difficulty: "0x0",
  extraData: "0x",
});
// Every kind of value the encoders give: bigints above 2^64, numbers, text, nulls (a contract creation's `to`, a legacy transaction's fees).
const transaction = (n: number) => ({
  blockNumber: hex(n),
  transactionIndex: hex(n % 64),
  hash: word(1_000 + n),
  blockHash: word(n),
  from: address(n),
  to: n % 3 === 0 ? null : address(n + 1),
  input: "0x6a627842",
  value: hex(2n ** 70n + BigInt(n)),
  nonce: hex(n),
  r: word(12),
  s: word(13),
  v: n % 2 ? "0x1" : undefined,
  type: n % 2 ? "0x2" : "0x0",
  gas: hex(100_000),
  gasPrice: n % 2 ? undefined : hex(3_000_000_000),
  maxFeePerGas: n % 2 ? hex(4_000_000_000) : undefined,
  maxPriorityFeePerGas: n % 2 ? hex(1_000_000) : undefined,
  accessList: n % 2 ? [{ address: address(5), storageKeys: [word(6)] }] : undefined,
});
const receipt = (n: number) => ({
  blockNumber: hex(n),
  transactionIndex: hex(n % 64),
  transactionHash: word(1_000 + n),
  blockHash: word(n),
  from: address(n),
  to: n % 3 === 0 ? null : address(n + 1),
  contractAddress: n % 3 === 0 ? address(9) : null,
  logsBloom: `0x${"0".repeat(512)}`,
  gasUsed: hex(50_000),
  cumulativeGasUsed: hex(50_000 * (n + 1)),
  effectiveGasPrice: hex(1_000_000_007),
  status: "0x1",
  type: "0x2",
});
const log = (n: number) => ({
  blockNumber: hex(n),
  logIndex: hex(n),
  transactionIndex: hex(n % 64),
  blockHash: word(n),
  transactionHash: word(1_000 + n),
  address: "0xE7F1725E7734CE288F8367E1BB143E90BB3F0512",
  topics: [word(20), word(n), ...(n % 2 ? [word(22)] : [])],
  data: `0x${"ab".repeat(n % 5)}`,
});

/** A sync store on a query builder that records what would be sent to PostgreSQL, and drizzle over the same client. */
function recordingStore(): { store: SyncStore; db: Db; sent: Query[] } {
  const sent: Query[] = [];
  const client = {
    query: async (text: string, params: unknown[]) => {
      sent.push({ text, params });
      return { rows: [], rowCount: 0 };
    },
  };
  const db = Object.assign(drizzle(client, { casing: "snake_case", schema }), { $client: client });
  const qb = { $dialect: "postgres", $client: client, wrap: (_options: unknown, query: (db: Db) => unknown) => query(db) };
  const common = { options: { databaseMaxQueryParameters: 50_000 } };
  return { store: createSyncStore({ common, qb }), db, sent };
}

const TABLES = [
  {
    name: "blocks",
    table: schema.blocks,
    target: ["chainId", "number"],
    rows: (count: number) => Array.from({ length: count }, (_, i) => block(100 + i)),
    insert: (store: SyncStore, rows: Row[]) => store.insertBlocks({ blocks: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeBlock!({ block: row, chainId: CHAIN_ID }),
  },
  {
    name: "transactions",
    table: schema.transactions,
    target: ["chainId", "blockNumber", "transactionIndex"],
    rows: (count: number) => Array.from({ length: count }, (_, i) => transaction(100 + i)),
    insert: (store: SyncStore, rows: Row[]) => store.insertTransactions({ transactions: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeTransaction!({ transaction: row, chainId: CHAIN_ID }),
  },
  {
    name: "transaction receipts",
    table: schema.transactionReceipts,
    target: ["chainId", "blockNumber", "transactionIndex"],
    rows: (count: number) => Array.from({ length: count }, (_, i) => receipt(100 + i)),
    insert: (store: SyncStore, rows: Row[]) => store.insertTransactionReceipts({ transactionReceipts: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeTransactionReceipt!({ transactionReceipt: row, chainId: CHAIN_ID }),
  },
  {
    name: "logs",
    table: schema.logs,
    target: ["chainId", "blockNumber", "logIndex"],
    rows: (count: number) => Array.from({ length: count }, (_, i) => log(100 + i)),
    insert: (store: SyncStore, rows: Row[]) => store.insertLogs({ logs: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeLog!({ log: row, chainId: CHAIN_ID }),
  },
];

for (const { name, table, target, rows, insert, encoded } of TABLES) {
  test(`the sync store's ${name} go to PostgreSQL as drizzle would send them, in batches of any size`, async () => {
    const { store, db, sent } = recordingStore();
    // The first batch builds the statement's form; the later ones, of other sizes, reuse it.
    for (const count of [1, 64, 2, 1]) {
      const batch = rows(count);
      sent.length = 0;
      await insert(store, batch);
      const expected = db
        .insert(table)
        .values(batch.map(encoded))
        .onConflictDoNothing({ target: target.map((column) => table[column]) })
        .toSQL();
      assert.equal(sent.length, 1, `one statement for ${count} rows`);
      assert.equal(sent[0]!.text, expected.sql);
      assert.deepEqual(sent[0]!.params, expected.params);
    }
  });
}
