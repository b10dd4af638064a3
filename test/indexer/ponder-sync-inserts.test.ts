// Ponder's sync store inserts the blocks, transactions, receipts and logs it fetches in one statement a
// table, each column's values in one array (patches/ponder+0.17.7.patch, sync-store/index.js): drizzle's
// multi-row VALUES list cost Ponder a third of its CPU in a backfill, and PostgreSQL most of its time on the
// insert parsing and planning it. What is stored must be what drizzle's statement stores, for a batch of
// any size and any text, and what a column refuses must still be refused.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import pg from "pg";
import { repoRoot } from "../../src/paths.ts";
import { createTestDatabase } from "../support/database.ts";

type Row = Record<string, unknown>;
interface Column {
  name: string;
  notNull: boolean;
  getSQLType(): string;
}
interface Db {
  insert(table: unknown): { values(rows: Row[]): { onConflictDoNothing(options: { target: unknown[] }): Promise<unknown> } };
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
const { getTableConfig } = await load<{ getTableConfig(table: unknown): { name: string; columns: Column[]; primaryKeys: { columns: Column[] }[] } }>("drizzle-orm/pg-core/index.js");

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
  // Text that an array literal must quote: a comma, braces, quotes, a backslash, the word NULL, non-ASCII.
  input: n % 4 === 1 ? '0x6a627842 {a,"b"} \\ NULL é' : "0x6a627842",
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

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
let db: Db;
/** Every statement the sync store sends. */
const sent: string[] = [];
let store: SyncStore;

/** drizzle's column name (`casing: "snake_case"`, as Ponder's sync store is set up). */
const columnName = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
/** A table's primary key columns, as a column list. */
const primaryKeyOf = (table: unknown) => getTableConfig(table).primaryKeys[0]!.columns.map((column) => `"${columnName(column.name)}"`).join(", ");

before(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  // The four tables as Ponder's schema declares them: column types, NOT NULL, primary keys.
  await pool.query("CREATE SCHEMA ponder_sync");
  for (const table of [schema.blocks, schema.transactions, schema.transactionReceipts, schema.logs]) {
    const config = getTableConfig(table);
    const columns = config.columns.map((column) => `"${columnName(column.name)}" ${column.getSQLType()}${column.notNull ? " NOT NULL" : ""}`);
    await pool.query(`CREATE TABLE ponder_sync.${config.name} (${columns.join(", ")}, PRIMARY KEY (${primaryKeyOf(table)}))`);
  }
  db = drizzle(pool, { casing: "snake_case", schema });
  const client = {
    query: (text: string, params: unknown[]) => {
      sent.push(text);
      return pool.query(text, params);
    },
  };
  const recorded = Object.assign(drizzle(client, { casing: "snake_case", schema }), { $client: client });
  const qb = { $dialect: "postgres", wrap: (_options: unknown, query: (db: Db) => unknown) => query(recorded) };
  store = createSyncStore({ common: { options: { databaseMaxQueryParameters: 50_000 } }, qb });
});
after(async () => {
  await pool?.end();
  await database?.drop();
});

const TABLES = [
  {
    name: "blocks",
    table: schema.blocks,
    target: ["chainId", "number"],
    rows: (count: number): Row[] => Array.from({ length: count }, (_, i) => block(100 + i)),
    insert: (rows: Row[]) => store.insertBlocks({ blocks: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeBlock!({ block: row, chainId: CHAIN_ID }),
  },
  {
    name: "transactions",
    table: schema.transactions,
    target: ["chainId", "blockNumber", "transactionIndex"],
    rows: (count: number): Row[] => Array.from({ length: count }, (_, i) => transaction(100 + i)),
    insert: (rows: Row[]) => store.insertTransactions({ transactions: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeTransaction!({ transaction: row, chainId: CHAIN_ID }),
  },
  {
    name: "transaction receipts",
    table: schema.transactionReceipts,
    target: ["chainId", "blockNumber", "transactionIndex"],
    rows: (count: number): Row[] => Array.from({ length: count }, (_, i) => receipt(100 + i)),
    insert: (rows: Row[]) => store.insertTransactionReceipts({ transactionReceipts: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeTransactionReceipt!({ transactionReceipt: row, chainId: CHAIN_ID }),
  },
  {
    name: "logs",
    table: schema.logs,
    target: ["chainId", "blockNumber", "logIndex"],
    rows: (count: number): Row[] => Array.from({ length: count }, (_, i) => log(100 + i)),
    insert: (rows: Row[]) => store.insertLogs({ logs: rows, chainId: CHAIN_ID }),
    encoded: (row: Row) => encode.encodeLog!({ log: row, chainId: CHAIN_ID }),
  },
];

const stored = async (table: unknown) => (await pool.query(`SELECT * FROM ponder_sync.${getTableConfig(table).name} ORDER BY ${primaryKeyOf(table)}`)).rows;

for (const { name, table, target, rows, insert, encoded } of TABLES) {
  test(`the sync store stores ${name} as drizzle's statement stores them, one statement a batch of any size`, async () => {
    const { name: tableName } = getTableConfig(table);
    // Batches that overlap: the later ones' rows already stored are skipped (ON CONFLICT DO NOTHING).
    const batches = [1, 64, 2].map(rows);
    sent.length = 0;
    for (const batch of batches) await insert(batch);
    assert.equal(sent.length, batches.length, "one statement a batch");
    assert.equal(new Set(sent).size, 1, "the same statement whatever the batch's size");
    const patched = await stored(table);
    assert.equal(patched.length, 64);

    await pool.query(`TRUNCATE ponder_sync.${tableName}`);
    for (const batch of batches) await db.insert(table).values(batch.map(encoded)).onConflictDoNothing({ target: target.map((column) => table[column]) });
    assert.deepEqual(patched, await stored(table));
    await pool.query(`TRUNCATE ponder_sync.${tableName}`);
  });
}

test("the sync store refuses a value its column refuses, as drizzle's statement does, instead of cutting it", async () => {
  const tooLong = { ...log(7), blockHash: `${word(7)}0` };
  await assert.rejects(store.insertLogs({ logs: [log(6), tooLong], chainId: CHAIN_ID }), /value too long for type character varying\(66\)/);
  await assert.rejects(db.insert(schema.logs).values([encode.encodeLog!({ log: tooLong, chainId: CHAIN_ID })]).onConflictDoNothing({ target: [schema.logs.chainId] }), /value too long/);
  assert.deepEqual(await stored(schema.logs), []);
});
