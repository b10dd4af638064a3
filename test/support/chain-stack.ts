// The chain side of the test and bench stacks, without a service: a Hardhat node with the escrow deployed,
// Ponder indexing it into a fresh test database, and the node driven directly. It imports nothing that
// runs test machinery (the OpenAPI check, node:test), so the bench and the service processes measure the
// service as production runs it.
import { existsSync } from "node:fs";
import path from "node:path";
import { freePort } from "../../src/stack/free-port.ts";
import { compileContracts, defaultArtifactsDir, deployLocal, type Deployment } from "../../src/stack/deploy.ts";
import { startIndexer, type Indexer, type IndexerOptions } from "../../src/stack/indexer-process.ts";
import { devAccounts, DEV_ACCOUNT, nodeRpc, startLocalChain, type LocalChain } from "../../src/stack/local-node.ts";
import type { ChainSettings } from "../../src/chain/escrow-gateway.ts";
import { createTestDatabase } from "./database.ts";

export { freePort, nodeRpc };

export interface ChainStack {
  chain: LocalChain;
  deployment: Deployment;
  databaseUrl: string;
  indexer: Indexer;
  indexerSchema: string;
  mining: TradeChain;
  /** What startService needs to reach the chain. */
  chainSettings: ChainSettings;
  close(): Promise<void>;
}

/**
 * How the test chain makes blocks. "auto": a block per transaction, at once (Hardhat's automine). "interval":
 * as production runs (decisions 15): a block every 2 s, nothing mined in between, the indexer polling
 * every second and the service applying events 3 blocks deep. `TRADE_CHAIN=interval` runs every trade
 * test file that does not choose on such a chain.
 */
export type TradeChain = "auto" | "interval";

export const INTERVAL_CHAIN = { blockMs: 2_000, confirmations: 3, pollingMs: 1_000 } as const;

export const defaultTradeChain: TradeChain = process.env.TRADE_CHAIN === "interval" ? "interval" : "auto";

/** What a test may choose about the escrow's deployment and the chain. */
export interface ChainStackOptions {
  /** The escrow's REFUND_GRACE_SECONDS (default the deploy's, 3600). */
  refundGraceSeconds?: number;
  /** Default `TRADE_CHAIN` ("auto"). */
  mining?: TradeChain;
  /**
   * The RPC_URL the indexer and the service use, given the node's own URL (default: the node itself),
   * e.g. a fault-injecting proxy in front of it, or several comma-separated endpoints. The deployment and
   * the test's own calls go to the node directly.
   */
  rpcFront?: (nodeUrl: string) => string | Promise<string>;
  /** The PostgreSQL server to make the stack's database on (default the tests', `TEST_DATABASE_URL`). */
  databaseServerUrl?: string;
}

/** A Hardhat node with the escrow deployed and Ponder indexing it into a fresh test database. */
export async function startChainStack(options: ChainStackOptions = {}): Promise<ChainStack> {
  if (!existsSync(path.join(defaultArtifactsDir, "contracts"))) await compileContracts({ quiet: true });
  // Everything started so far is stopped if a later step fails, so a failed set-up never hangs the run.
  const started: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const stop of started.reverse()) await stop().catch(() => undefined);
  };
  try {
    const chain = await startLocalChain({ port: 0 });
    started.push(() => chain.stop());
    const deployment = await deployLocal({
      rpcUrl: chain.rpcUrl,
      ...(options.refundGraceSeconds !== undefined ? { refundGraceSeconds: options.refundGraceSeconds } : {}),
    });
    const mining = options.mining ?? defaultTradeChain;
    if (mining === "interval") {
      await nodeRpc(chain.rpcUrl, "evm_setAutomine", [false]);
      await nodeRpc(chain.rpcUrl, "evm_setIntervalMining", [INTERVAL_CHAIN.blockMs]);
    }
    const rpcUrl = options.rpcFront ? await options.rpcFront(chain.rpcUrl) : chain.rpcUrl;
    const database = await createTestDatabase(options.databaseServerUrl);
    started.push(() => database.drop());
    const indexerSchema = `ponder_t${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    const indexer = await startIndexer({
      ...(await escrowIndexerOptions(deployment, rpcUrl, database.url, indexerSchema)),
      logLevel: "warn",
      // As `npm start` runs it: new heads from the node's WebSocket. A test that fronts the RPC with a
      // proxy, or mines every 2 s as production, keeps production's default of polling RPC_URL.
      ...(mining === "interval" ? { pollingIntervalMs: INTERVAL_CHAIN.pollingMs } : options.rpcFront ? {} : { newHeadsUrl: chain.wsUrl }),
    });
    started.push(() => indexer.stop());
    const chainSettings: ChainSettings = {
      rpcUrl,
      chainId: deployment.chainId,
      escrowAddress: deployment.escrowAddress,
      usdcAddress: deployment.usdcAddress,
      servicePrivateKey: devAccounts[DEV_ACCOUNT.service].privateKey,
      arbiterPrivateKey: devAccounts[DEV_ACCOUNT.arbiter].privateKey,
    };
    return { chain, deployment, databaseUrl: database.url, indexer, indexerSchema, mining, chainSettings, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Ponder's options for `deployment`'s escrow from its deployment block on the node at `rpcUrl`, into `schema` of `databaseUrl`, on a free port. */
export async function escrowIndexerOptions(deployment: Deployment, rpcUrl: string, databaseUrl: string, schema: string): Promise<IndexerOptions> {
  return {
    databaseUrl,
    schema,
    rpcUrl,
    chainId: deployment.chainId,
    escrowAddress: deployment.escrowAddress,
    startBlock: deployment.deploymentBlock,
    port: await freePort(),
  };
}

/** The test node driven directly, for tests that make its blocks and reorganisations themselves. */
export interface TestNode {
  rpc(method: string, params?: unknown[]): Promise<unknown>;
  /**
   * One evm_mine per block: hardhat_mine of several blocks reserves the middle ones lazily and the last
   * then names a zero parent hash, which Ponder cannot follow (it stops at "Block at hash 0x00…0").
   */
  mine(blocks: number): Promise<void>;
  /** The node's head. */
  blockNumber(): Promise<bigint>;
}

export function testNode(rpcUrl: string): TestNode {
  const rpc = (method: string, params: unknown[] = []) => nodeRpc(rpcUrl, method, params);
  return {
    rpc,
    async mine(blocks) {
      for (let i = 0; i < blocks; i++) await rpc("evm_mine");
    },
    blockNumber: async () => BigInt(String(await rpc("eth_blockNumber"))),
  };
}
