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

/** A chain at `head` (already final-enough) whose log reads are recorded; no logs. */
function chainAt(head: { block: bigint }) {
  const reads: [bigint, bigint][] = [];
  return {
    reads,
    reader: {
      finalEnoughBlock: async () => head.block,
      escrowEvents: async (from: bigint, to: bigint): Promise<ChainEscrowEvent[]> => {
        reads.push([from, to]);
        return [];
      },
      blockTimestamp: async () => 0n,
    },
  };
}

/** One instance's reconciliation (a new one per "restart"). */
function instance(schema: string, reader: ReturnType<typeof chainAt>["reader"]) {
  return createEscrowReconciliation({ pool, chain: reader, apply: async () => true, logger: createLogger("silent"), indexerSchema: schema, intervalMs: INTERVAL_MS });
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
