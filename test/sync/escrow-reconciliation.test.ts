// The reconciliation's pass (src/sync/escrow-reconciliation.ts) against real PostgreSQL, with a chain
// reader that records what it is asked: which blocks it reads, whatever instance runs it and however
// often instances restart. Applying what it finds is tested on the real chain (test/chain/reconciliation).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { migrate } from "../../src/db/migrate.ts";
import { createLogger } from "../../src/logger.ts";
import type { ChainEscrowEvent } from "../../src/sync/escrow-events.ts";
import { createEscrowReconciliation, RECONCILE_OVERLAP_BLOCKS } from "../../src/sync/escrow-reconciliation.ts";
import { createTestDatabase } from "../support/database.ts";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  pool = createPool(database.url, 4);
});
after(async () => {
  await pool?.end();
  await database?.drop();
});

const INTERVAL_MS = 30_000;

/**
 * A chain at `head` (already final-enough) whose log reads are recorded; `logs` its escrow logs (none
 * unless given), `hashes` its blocks' hashes by number (a block not there: the node does not have it).
 */
function chainAt(head: { block: bigint }, logs: ChainEscrowEvent[] = [], hashes = new Map<bigint, string>()) {
  const reads: [bigint, bigint][] = [];
  return {
    reads,
    reader: {
      finalEnoughBlock: async () => head.block,
      escrowEvents: async (from: bigint, to: bigint): Promise<ChainEscrowEvent[]> => {
        reads.push([from, to]);
        return logs.filter((log) => BigInt(log.block_number) >= from && BigInt(log.block_number) <= to);
      },
      blockTimestamp: async () => 0n,
      blockHash: async (number: bigint) => hashes.get(number),
      transactionMined: async () => true,
    },
  };
}

/** One instance's reconciliation (a new one per "restart"); the events it reports orphaned go to `orphaned`. */
function instance(schema: string, reader: ReturnType<typeof chainAt>["reader"], orphaned: string[] = []) {
  return createEscrowReconciliation(instanceOptions(schema, reader, orphaned));
}

function instanceOptions(schema: string, reader: ReturnType<typeof chainAt>["reader"], orphaned: string[] = []): Parameters<typeof createEscrowReconciliation>[0] {
  return {
    pool,
    chain: reader,
    apply: async () => true,
    orphan: async (eventIds) => orphaned.push(...eventIds),
    transactionRemoved: async () => true,
    logger: createLogger("silent"),
    indexerSchema: schema,
    intervalMs: INTERVAL_MS,
  };
}

/** As if the last pass's look at the chain were `seconds` ago. */
const age = (schema: string, seconds: number) =>
  pool.query("UPDATE chain_reconciliation SET seen_at = now() - make_interval(secs => $2) WHERE indexer_schema = $1", [schema, seconds]);

test("the first pass on a schema reads nothing: the chain up to there is the indexer's to deliver", async () => {
  const head = { block: 1_000n };
  const chain = chainAt(head);
  await instance("first", chain.reader).reconcileOnce();
  assert.deepEqual(chain.reads, []);
  const { rows } = await pool.query("SELECT reconciled_to, seen_block FROM chain_reconciliation WHERE indexer_schema = 'first'");
  assert.deepEqual(rows, [{ reconciled_to: "1000", seen_block: "1000" }]);
});

test("logs are read only up to the block seen an interval ago, from a little below where the last pass ended", async () => {
  const head = { block: 1_000n };
  const chain = chainAt(head);
  await instance("interval", chain.reader).reconcileOnce();
  head.block = 1_040n;
  await instance("interval", chain.reader).reconcileOnce();
  assert.deepEqual(chain.reads, [], "seen less than an interval ago: not yet");
  await age("interval", INTERVAL_MS / 1000);
  head.block = 1_090n;
  await instance("interval", chain.reader).reconcileOnce();
  assert.deepEqual(chain.reads, [[1_000n - RECONCILE_OVERLAP_BLOCKS + 1n, 1_000n]], "up to 1000, seen an interval ago; not 1090");
  const { rows } = await pool.query("SELECT reconciled_to, seen_block FROM chain_reconciliation WHERE indexer_schema = 'interval'");
  assert.deepEqual(rows, [{ reconciled_to: "1000", seen_block: "1090" }]);
});

test("instances that restart before an interval passes still move the reconciliation on", async () => {
  const head = { block: 5_000n };
  const chain = chainAt(head);
  await instance("restarts", chain.reader).reconcileOnce();
  for (const block of [5_100n, 5_200n, 5_300n]) {
    await age("restarts", INTERVAL_MS / 1000);
    head.block = block;
    await instance("restarts", chain.reader).reconcileOnce(); // a new process each time, one pass each
  }
  assert.deepEqual(
    chain.reads.map(([, to]) => to),
    [5_000n, 5_100n, 5_200n],
  );
});

test("a long way behind is read in windows of 500 blocks", async () => {
  const head = { block: 10_000n };
  const chain = chainAt(head);
  await instance("windows", chain.reader).reconcileOnce();
  await age("windows", INTERVAL_MS / 1000);
  head.block = 11_200n;
  await instance("windows", chain.reader).reconcileOnce();
  await age("windows", INTERVAL_MS / 1000);
  await instance("windows", chain.reader).reconcileOnce();
  const last = chain.reads.slice(1);
  assert.ok(last.every(([from, to]) => to - from + 1n <= 500n), JSON.stringify(last.map(([from, to]) => [String(from), String(to)])));
  assert.equal(last[0]![0], 10_000n - RECONCILE_OVERLAP_BLOCKS + 1n);
  assert.equal(last.at(-1)![1], 11_200n);
});

test("two instances at once: one reads, the other skips", async () => {
  const head = { block: 20_000n };
  const chain = chainAt(head);
  await instance("two", chain.reader).reconcileOnce();
  await age("two", INTERVAL_MS / 1000);
  await Promise.all([instance("two", chain.reader).reconcileOnce(), instance("two", chain.reader).reconcileOnce()]);
  assert.equal(chain.reads.length, 1);
});

test("an instance killed mid-pass leaves its range to the next pass, which reads it again", async () => {
  const head = { block: 25_000n };
  const chain = chainAt(head);
  await instance("killed", chain.reader).reconcileOnce();
  await age("killed", INTERVAL_MS / 1000);
  head.block = 25_100n;
  // The instance's database session ends while it holds the schema's row, as when its process is SIGKILLed.
  const dying = {
    ...chain.reader,
    escrowEvents: async (from: bigint, to: bigint) => {
      const { rows } = await pool.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE '%FROM chain_reconciliation%FOR UPDATE%'`,
      );
      assert.deepEqual(rows, [{ ended: true }], "the pass's session, holding the row");
      return chain.reader.escrowEvents(from, to);
    },
  };
  await assert.rejects(instance("killed", dying).reconcileOnce());
  const range: [bigint, bigint] = [25_000n - RECONCILE_OVERLAP_BLOCKS + 1n, 25_000n];
  assert.deepEqual(chain.reads, [range]);
  await instance("killed", chain.reader).reconcileOnce(); // another instance, at once: the row is free, the pass due
  assert.deepEqual(chain.reads, [range, range], "the same blocks read again");
  const { rows } = await pool.query("SELECT reconciled_to, seen_block FROM chain_reconciliation WHERE indexer_schema = 'killed'");
  assert.deepEqual(rows, [{ reconciled_to: "25000", seen_block: "25100" }]);
});

test("a pass ends its transaction once: no ROLLBACK after its COMMIT, and one that fails rolls back", async () => {
  // The passes' sessions, whose warnings are kept: a ROLLBACK with no transaction open is one, and so is
  // the BEGIN of a pass handed the session the last one left in its transaction (the pool's last released).
  const notices: string[] = [];
  const session = createPool(database.url, 2);
  session.on("connect", (client) => client.on("notice", (notice) => notices.push(String(notice.message))));
  try {
    const head = { block: 35_000n };
    const chain = chainAt(head);
    const pass = (reader: ReturnType<typeof chainAt>["reader"]) => createEscrowReconciliation({ ...instanceOptions("once", reader), pool: session }).reconcileOnce();
    await pass(chain.reader); // the first: the schema's row inserted
    await age("once", INTERVAL_MS / 1000);
    await pass(chain.reader); // a due pass: logs read, the row moved on
    assert.equal(chain.reads.length, 1);
    assert.deepEqual(notices, []);

    await age("once", INTERVAL_MS / 1000);
    await assert.rejects(pass({ ...chain.reader, escrowEvents: async () => Promise.reject(new Error("node down")) }), /node down/);
    await pass(chain.reader); // the failed pass's row is free again, its range still due
    assert.equal(chain.reads.length, 2);
    assert.deepEqual(notices, []);
  } finally {
    await session.end();
  }
});

test("an applied event whose block the chain has replaced is reported orphaned; one a read left out whose block is unchanged or unknown is not", async () => {
  const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
  const applied = (block: number, blockHash: string, log = 0) => ({ id: `31337-${block}-${log}`, event_id: `31337-${block}-${log}:${blockHash}`, block });
  const stillThere = applied(30_010, hash(1)); // among the logs read
  const replaced = applied(30_020, hash(2)); // its block now has another hash
  const leftOut = applied(30_030, hash(3)); // not among the logs read (a lagging node), its block unchanged
  const unknownBlock = applied(30_040, hash(4)); // the node has no block 30,040 yet
  for (const event of [stillThere, replaced, leftOut, unknownBlock]) {
    await pool.query("INSERT INTO applied_chain_events (event_id, order_id, indexer_schema, block_number, event_name, transaction_hash) VALUES ($1, 'ord_x', 'orphans', $2, 'Released', '0x1')", [event.event_id, event.block]);
  }
  const log: ChainEscrowEvent = { id: stillThere.id, block_number: "30010", block_hash: hash(1), transaction_hash: "0x1", log_index: 0, event_name: "Released", order_id: "0xab", args: {} };
  const chain = chainAt({ block: 30_050n }, [log], new Map([[30_010n, hash(1)], [30_020n, hash(22)], [30_030n, hash(3)]]));
  const orphaned: string[] = [];
  await instance("orphans", chain.reader, orphaned).reconcileOnce();
  await age("orphans", INTERVAL_MS / 1000);
  await instance("orphans", chain.reader, orphaned).reconcileOnce();
  assert.deepEqual(orphaned, [replaced.event_id]);
});

/** An indexer schema holding `rows` (event keys `<id>:<block hash>`) and its head at `head`. */
async function indexerHolding(schema: string, head: { block: bigint; hash: string }, rows: string[]): Promise<void> {
  await pool.query(`CREATE SCHEMA ${schema}`);
  await pool.query(`CREATE TABLE ${schema}.escrow_event (id text PRIMARY KEY, block_number bigint NOT NULL, block_hash text NOT NULL)`);
  await pool.query(`CREATE TABLE ${schema}.indexer_head (chain_id integer PRIMARY KEY, block_number bigint NOT NULL, block_hash text NOT NULL)`);
  await pool.query(`INSERT INTO ${schema}.indexer_head VALUES (31337, $1, $2)`, [head.block.toString(), head.hash]);
  for (const key of rows) {
    const [id, blockHash] = key.split(":") as [string, string];
    await pool.query(`INSERT INTO ${schema}.escrow_event VALUES ($1, $2, $3)`, [id, id.split("-")[1], blockHash]);
  }
}

/** Escrow logs at `blocks` (one each, log 0), the block hash of each block `0x…<block>`. */
function logsAt(blocks: number[]): { logs: ChainEscrowEvent[]; hashes: Map<bigint, string>; key: (block: number) => string } {
  const hash = (block: number) => `0x${block.toString(16).padStart(64, "0")}`;
  return {
    logs: blocks.map((block) => ({ id: `31337-${block}-0`, block_number: String(block), block_hash: hash(block), transaction_hash: "0x1", log_index: 0, event_name: "Deposited", order_id: "0xab", args: {} })),
    hashes: new Map([40_010, 40_020, 40_030].map((block) => [BigInt(block), hash(block)])),
    key: (block) => `31337-${block}-0:${hash(block)}`,
  };
}

/** Two passes over blocks up to 40,050 on `schema`: the second reads them and audits the indexer. */
async function auditedPasses(schema: string, chain: ReturnType<typeof logsAt>) {
  const reconciliation = instance(schema, chainAt({ block: 40_050n }, chain.logs, chain.hashes).reader);
  await reconciliation.reconcileOnce();
  await age(schema, INTERVAL_MS / 1000);
  await reconciliation.reconcileOnce();
  return reconciliation;
}

test("a chain's escrow log at or below the indexer's head, on the chain's branch, that the indexer's rows lack is reported", async () => {
  const chain = logsAt([40_010, 40_020]);
  await indexerHolding("audit_lost", { block: 40_030n, hash: chain.hashes.get(40_030n)! }, [chain.key(40_010)]);
  assert.equal((await auditedPasses("audit_lost", chain)).indexerMissing(), 1);
});

test("no escrow log is reported lacking above the indexer's head, or while its head is on another branch", async () => {
  const chain = logsAt([40_010, 40_020]);
  const block15 = `0x${"15".padStart(64, "0")}`;
  chain.hashes.set(40_015n, block15);
  await indexerHolding("audit_behind", { block: 40_015n, hash: block15 }, [chain.key(40_010)]);
  assert.equal((await auditedPasses("audit_behind", chain)).indexerMissing(), 0, "40,020 is above the head");
  await indexerHolding("audit_branch", { block: 40_030n, hash: `0x${"ee".repeat(32)}` }, [chain.key(40_010)]);
  assert.equal((await auditedPasses("audit_branch", chain)).indexerMissing(), 0, "the head is not the chain's block");
});
