// How Ponder goes live after its backfill (patches/ponder+0.17.7.patch): the unfinalized blocks it finds
// at start-up (the last 30 on chain 31337), or that a stall left behind, come to its live indexing all at
// once. Unpatched, it first waited a whole polling interval for its first poll of the head (1 s on a
// remote chain) and then gave each block a transaction and a commit of its own; figure 6's catch-up
// spent 360-440 ms there, against 120-140 ms now (docs/benchmarks.md, stop 64). On a real Hardhat node
// and PostgreSQL, Ponder polling (no WebSocket) at a long interval.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { createPublicClient, createWalletClient, http, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";
import { ARBITER_ROLE, deployLocal, type Deployment } from "../../src/stack/deploy.ts";
import { startIndexer, type Indexer, type IndexerLogger } from "../../src/stack/indexer-process.ts";
import { DEV_ACCOUNT, devAccounts, startLocalChain, type LocalChain } from "../../src/stack/local-node.ts";
import { eventTable, readIndexerHead } from "../../src/sync/indexer-tables.ts";
import { escrowIndexerOptions } from "../support/chain-stack.ts";
import { createTestDatabase } from "../support/database.ts";
import { waitFor } from "../support/trade-stack.ts";

const SCHEMA = "ponder_live_catch_up";
/** Blocks with an escrow event each, mined before Ponder starts: all within its 30 unfinalized blocks. */
const BLOCKS = 20;
/** Longer than the test waits for the head: a first poll only after it would fail the test. */
const POLLING_INTERVAL_MS = 30_000;

let chain: LocalChain;
let deployment: Deployment;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: pg.Pool;
let indexer: Indexer | undefined;
const grantBlocks: bigint[] = [];

before(async () => {
  chain = await startLocalChain({ port: 0 });
  deployment = await deployLocal({ rpcUrl: chain.rpcUrl });
  database = await createTestDatabase();
  db = new pg.Pool({ connectionString: database.url, max: 2 });
  // One block each (the node mines on every transaction), each holding one RoleGranted event.
  const transport = http(chain.rpcUrl);
  const admin = createWalletClient({ account: privateKeyToAccount(devAccounts[DEV_ACCOUNT.admin]!.privateKey), chain: { ...hardhat, id: deployment.chainId }, transport });
  const reader = createPublicClient({ transport });
  for (let i = 0; i < BLOCKS; i += 1) {
    const grantee = `0x${(0x1000 + i).toString(16).padStart(40, "0")}` as Address;
    const hash = await admin.writeContract({ address: deployment.escrowAddress, abi: escrowAbi, functionName: "grantRole", args: [ARBITER_ROLE, grantee] });
    const receipt = await reader.waitForTransactionReceipt({ hash });
    grantBlocks.push(receipt.blockNumber);
  }
});
after(async () => {
  await indexer?.stop();
  await db?.end();
  await database?.drop();
  await chain?.stop();
});

test("blocks found unindexed at start-up are live-indexed at once, several in one transaction, every block whole", async () => {
  const head = grantBlocks.at(-1)!;
  // Ponder's record of each live-indexing transaction: its last block and how many blocks it held.
  const transactions: { number: number; blocks: number }[] = [];
  const ignore = () => undefined;
  const logger: IndexerLogger = {
    debug: (context, message) => {
      const { number, block_count: blocks } = context as { number?: number; block_count?: number };
      if (message === "Indexed block" && number !== undefined) transactions.push({ number, blocks: blocks ?? 1 });
    },
    info: ignore,
    warn: ignore,
    error: ignore,
  };
  indexer = await startIndexer({
    ...(await escrowIndexerOptions(deployment, chain.rpcUrl, database.url, SCHEMA)),
    pollingIntervalMs: POLLING_INTERVAL_MS,
    logger,
    logLevel: "debug",
  });
  // Ready answers once the backfill is done; the head is then reached without waiting for a poll.
  await waitFor(
    "the indexer at the chain's head, and its record of it",
    async () => ((await readIndexerHead(db, SCHEMA))?.latestBlock === head && transactions.at(-1)?.number === Number(head) ? true : undefined),
    POLLING_INTERVAL_MS / 2,
  );

  const { rows } = await db.query<{ block_number: string }>(
    `SELECT block_number FROM ${eventTable(SCHEMA)} WHERE event_name = 'RoleGranted' AND block_number >= $1 ORDER BY block_number`,
    [grantBlocks[0]!.toString()],
  );
  assert.deepEqual(rows.map((row) => BigInt(row.block_number)), grantBlocks, "one RoleGranted row for each block, none missing");
  // Every block from the first live one to the head was indexed once, in far fewer transactions.
  const live = transactions.reduce((sum, transaction) => sum + transaction.blocks, 0);
  assert.equal(transactions[0]!.number - transactions[0]!.blocks + live, Number(head), `blocks indexed live: ${JSON.stringify(transactions)}`);
  assert.ok(live >= BLOCKS, `${live} blocks indexed live`);
  assert.ok(transactions.length < BLOCKS / 2, `${live} blocks indexed live in ${transactions.length} transactions`);
});
