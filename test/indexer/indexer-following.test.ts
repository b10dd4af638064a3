// Whether the indexer follows the chain (decisions 7 and 15, docs/operations.md): /readyz and the metrics
// say when the indexer is behind the chain or off it, the latter after a reorganisation deeper than
// Ponder's finality (30 blocks on chain 31337), which Ponder 0.17 does not recover from while answering
// ready. On the real local chain, service and Ponder.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { createPublicClient, http } from "viem";
import { createLogger } from "../../src/logger.ts";
import { readIndexerHead } from "../../src/sync/indexer-tables.ts";
import { INDEXER_BEHIND_AFTER_MS, watchIndexerFollowing, type IndexerFollowWatch } from "../../src/sync/indexer-following.ts";
import { completedTrade } from "../support/trade-paths.ts";
import { startTradeStack, testNode, waitFor, type TestNode, type TradeStack } from "../support/trade-stack.ts";

const PONDER_FINALITY_BLOCKS = 30;
let stack: TradeStack;
let db: pg.Pool;
let node: TestNode;
before(async () => {
  // The reconciliation with the chain every 2 s, not 30: the last test trades past a stopped indexer.
  stack = await startTradeStack({ CHAIN_RECONCILE_INTERVAL_SECONDS: "2" }, {}, { mining: "auto" });
  node = testNode(stack.chain.rpcUrl);
  db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
});
after(async () => {
  await db?.end();
  await stack?.close();
});

const indexedHead = async () => (await readIndexerHead(db, stack.indexerSchema))?.latestBlock;
async function readiness(): Promise<Record<string, string>> {
  return (await (await fetch(`${stack.service.baseUrl}/readyz`)).json()) as Record<string, string>;
}
async function metric(name: string): Promise<number | undefined> {
  const text = await (await fetch(`${stack.service.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(" ")[1]);
}
function watch(now?: () => number): IndexerFollowWatch {
  const publicClient = createPublicClient({ transport: http(stack.chain.rpcUrl) });
  return watchIndexerFollowing({ db, indexerSchema: stack.indexerSchema, publicClient, logger: createLogger("silent"), intervalMs: 3_600_000, ...(now ? { now } : {}) });
}

test("an indexer that follows the chain is reported ok, with its lag in the metrics", async () => {
  await node.mine(2);
  const head = await node.blockNumber();
  await waitFor("Ponder at the chain's head", async () => ((await indexedHead()) === head ? true : undefined));
  const following = watch();
  try {
    const reading = await following.check();
    assert.equal(reading.problem, null);
    assert.equal(reading.lagBlocks, 0);
    assert.equal(reading.indexedHead, head.toString());
  } finally {
    following.stop();
  }
  // The running service's own watch (at start, then every 15 s): once it has seen an indexed block.
  await waitFor("the service's lag gauge", async () => metric("offramp_indexer_lag_blocks"), 30_000);
  assert.equal((await readiness()).indexer, "ok");
  assert.equal(await metric("offramp_indexer_off_chain"), 0);
  assert.equal(await metric("offramp_indexer_behind"), 0);
});

test("an indexer that has not reached where the chain was a minute ago is reported behind", async () => {
  let clock = 1_000_000;
  // The indexer's head as it stood before the chain moved on: a database view of it that does not move.
  const frozen = await readIndexerHead(db, stack.indexerSchema);
  assert.ok(frozen);
  const stalled = {
    query: async (sql: string, values?: unknown[]) => {
      const result = await db.query(sql, values);
      return { rows: result.rows.map((row: Record<string, unknown>) => ({ ...row, block_number: frozen.latestBlock.toString(), block_hash: frozen.latestBlockHash })) };
    },
  };
  const following = watchIndexerFollowing({
    db: stalled,
    indexerSchema: stack.indexerSchema,
    publicClient: createPublicClient({ transport: http(stack.chain.rpcUrl) }),
    logger: createLogger("silent"),
    intervalMs: 3_600_000,
    now: () => clock,
  });
  try {
    await node.mine(3);
    const soon = await following.check();
    assert.equal(soon.behind, false, "a few blocks behind for a moment is not behind");
    assert.ok(soon.lagBlocks! >= 3);
    clock += INDEXER_BEHIND_AFTER_MS + 1_000;
    const later = await following.check();
    assert.equal(later.behind, true);
    assert.match(later.problem!, /^behind: the chain was at block \d+ a minute ago, indexed up to \d+/);
  } finally {
    following.stop();
  }
});

test("a reorganisation deeper than the indexer's finality is reported: the indexer is off the chain", { timeout: 240_000 }, async () => {
  const snapshot = await node.rpc("evm_snapshot");
  // Ponder moves its finalized block (to 30 below the head) once the head is 60 past it: a branch of 65
  // blocks puts the snapshot's block below the finalized one.
  await node.mine(2 * PONDER_FINALITY_BLOCKS + 5);
  const branchHead = await node.blockNumber();
  await waitFor("Ponder at the doomed branch's head", async () => ((await indexedHead()) === branchHead ? true : undefined), 60_000);
  assert.equal(await node.rpc("evm_revert", [snapshot]), true);
  await node.mine(2 * PONDER_FINALITY_BLOCKS + 10);
  await sleep(3_000); // Ponder's polls see the new branch and give up on it ("unrecoverable reorg")

  const following = watch();
  try {
    // Two comparisons with the head unmoved (the watch makes one as it starts): not a reorganisation
    // Ponder is about to rewind at its next poll.
    await sleep(2_000);
    const second = await following.check();
    assert.equal(second.offChain, true, `still on the removed branch: ${JSON.stringify(second)}`);
    assert.match(second.problem!, /^off the chain: block \d+ indexed as 0x[0-9a-f]{64}, the chain has 0x[0-9a-f]{64}; .*re-index into a new INDEXER_SCHEMA/);
  } finally {
    following.stop();
  }
  // The running service's own watch (every 15 s) says so on /readyz and in its metrics.
  const line = await waitFor("/readyz naming the indexer off the chain", async () => {
    const indexer = (await readiness()).indexer;
    return indexer?.startsWith("off the chain") ? indexer : undefined;
  }, 60_000);
  assert.match(line, /re-index/);
  assert.equal(await metric("offramp_indexer_off_chain"), 1);
});

test("with the indexer off the chain, a whole trade still follows the chain, from the escrow's own logs", { timeout: 180_000 }, async () => {
  // Runs after the reorganisation above: Ponder indexes nothing more, so no event of this trade reaches
  // the consumer; the reconciliation reads them from the chain (sync/escrow-reconciliation.ts).
  const frozen = await indexedHead();
  const done = await completedTrade(stack, 90_000);
  assert.equal(await indexedHead(), frozen, "the indexer indexed none of it");
  const { rows } = await db.query<{ event_name: string }>("SELECT event_name FROM applied_chain_events WHERE order_id = $1 ORDER BY block_number", [done.id]);
  assert.deepEqual(rows.map((row) => row.event_name), ["Deposited", "Locked", "Released"]);
  assert.ok((await metric("offramp_chain_events_recovered_total"))! >= 3);
});
