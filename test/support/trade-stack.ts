import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { compileContracts, defaultArtifactsDir, deployLocal, type Deployment } from "../../src/stack/deploy.ts";
import { startIndexer, type Indexer } from "../../src/stack/indexer-process.ts";
import { devAccounts, DEV_ACCOUNT, startLocalChain, type LocalChain } from "../../src/stack/local-node.ts";
import { withCheckDigit } from "../../src/domain/clabe.ts";
import type { ChainSettings } from "../../src/chain/escrow-gateway.ts";
import type { SendOutcome, TransactionSender } from "../../src/chain/transaction-sender.ts";
import type { ServiceOptions } from "../../src/main.ts";
import { createTestDatabase } from "./database.ts";
import { ADMIN_TOKEN, startTestService, type TestService } from "./service.ts";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

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

export interface TradeStack extends Omit<ChainStack, "close"> {
  service: TestService;
  /** A partner with its credentials, created through the admin API. */
  partner: { id: string; apiKey: string; webhookSecret: string };
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

/**
 * Seconds from a transaction to its event reaching the service: none on automine; on an interval chain
 * its block, the confirmations on top and a poll of the indexer (9 s). A test that must act inside a
 * window that opens on chain (a lock) widens it by this, keeping the margin it has on automine.
 */
export const EVENT_DELAY_SECONDS = defaultTradeChain === "interval" ? (INTERVAL_CHAIN.blockMs * (INTERVAL_CHAIN.confirmations + 1) + INTERVAL_CHAIN.pollingMs) / 1000 : 0;

/** How long a trade step may take by default: three blocks, confirmations and polling on an interval chain. */
const DEFAULT_WAIT_MS = defaultTradeChain === "interval" ? 60_000 : 20_000;

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
    const database = await createTestDatabase();
    started.push(() => database.drop());
    const indexerSchema = `ponder_t${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    const indexer = await startIndexer({
      databaseUrl: database.url,
      schema: indexerSchema,
      rpcUrl,
      chainId: deployment.chainId,
      escrowAddress: deployment.escrowAddress,
      startBlock: deployment.deploymentBlock,
      port: await freePort(),
      logLevel: "warn",
      ...(mining === "interval" ? { pollingIntervalMs: INTERVAL_CHAIN.pollingMs } : {}),
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

/** One JSON-RPC call to the test node (Hardhat's own methods included); throws its error. */
export async function nodeRpc(rpcUrl: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
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

/** The service's configuration a chain's mining calls for: on an interval chain, events applied 3 blocks deep. */
function miningEnv(mining: TradeChain): Record<string, string> {
  return mining === "interval" ? { CHAIN_CONFIRMATIONS: String(INTERVAL_CHAIN.confirmations) } : {};
}

/**
 * The real thing for trade tests: the chain stack plus the service consuming Ponder's events, and an
 * ENTERPRISE partner. `env` sets the service's configuration (on an interval chain CHAIN_CONFIRMATIONS
 * is 3 unless `env` says otherwise).
 */
export async function startTradeStack(env: Record<string, string> = {}, partnerFields: Record<string, unknown> = {}, chainOptions: ChainStackOptions = {}): Promise<TradeStack> {
  const chainStack = await startChainStack(chainOptions);
  try {
    const service = await startTestService({ ...miningEnv(chainStack.mining), ...env }, { databaseUrl: chainStack.databaseUrl, indexerSchema: chainStack.indexerSchema, chain: chainStack.chainSettings });
    try {
      const partner = await service.createPartner({ tier: "ENTERPRISE", ...partnerFields });
      return {
        ...chainStack,
        service,
        partner,
        async close() {
          await service.close();
          await chainStack.close();
        },
      };
    } catch (error) {
      await service.close();
      throw error;
    }
  } catch (error) {
    await chainStack.close();
    throw error;
  }
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = DEFAULT_WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Waits until none of the chain transactions `load` returns is still being sent (PENDING or SENT) and
 * returns them. An order takes its end from the confirmed event while the sender settles its row at the
 * same depth in its own job, so on an interval-mined chain either may come first.
 */
export async function waitForSettled<T extends { status: string }>(what: string, load: () => Promise<T[]>, timeoutMs = DEFAULT_WAIT_MS): Promise<T[]> {
  return waitFor(`${what} settled`, async () => {
    const rows = await load();
    return rows.some((row) => row.status === "PENDING" || row.status === "SENT") ? undefined : rows;
  }, timeoutMs);
}

/**
 * The transactions that went to the chain. On an interval chain an order's timer may fire before the
 * event that made its action pointless is confirmed (a dispute before the lock expired, a lock before
 * the listing did): the sender finds the escrow moved on and marks that row SKIPPED, never sent.
 */
export function sentToChain<T extends { status: string }>(rows: T[]): T[] {
  return rows.filter((row) => row.status !== "SKIPPED");
}

/** Steps the sender until its transaction settles: on an interval chain it is mined, and final, blocks after it is sent. */
export async function settleTransaction(sender: Pick<TransactionSender, "process">, id: string): Promise<SendOutcome> {
  return waitFor(`transaction ${id} settled`, async () => {
    const outcome = await sender.process(id);
    return outcome === "SENT" ? undefined : outcome;
  });
}

/** A valid CLABE at BBVA (prefix 012) for test sellers. */
export const SELLER_CLABE = withCheckDigit("01218000118359719");

/** Registers a user, quotes and orders: returns the order's create response. */
export async function placeOrder(
  stack: Pick<TradeStack, "service" | "partner">,
  options: { ref?: string; amountUsdc?: number; feePercent?: number; feeRecipient?: string } = {},
): Promise<Record<string, unknown> & { id: string; escrowOrderId: string; status: string }> {
  const { service, partner } = stack;
  const ref = options.ref ?? `user-${Math.random().toString(36).slice(2, 10)}`;
  const user = await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: ref } });
  if (user.status !== 201 && user.status !== 409) throw new Error(`user: ${JSON.stringify(user.body)}`);
  const quote = await service.api<{ id: string }>("POST", "/quotes", {
    key: partner.apiKey,
    body: {
      type: "SELL",
      amountUsdc: options.amountUsdc ?? 100,
      partnerUserRef: ref,
      ...(options.feePercent !== undefined ? { feePercent: options.feePercent, feeRecipient: options.feeRecipient ?? "USER" } : {}),
    },
  });
  if (quote.status !== 201) throw new Error(`quote: ${JSON.stringify(quote.body)}`);
  const order = await service.api<Record<string, unknown> & { id: string; escrowOrderId: string; status: string }>("POST", "/orders", {
    key: partner.apiKey,
    body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE },
  });
  if (order.status !== 201) throw new Error(`order: ${JSON.stringify(order.body)}`);
  return order.body;
}

/** Waits until GET /orders/:id shows `status`; returns the detail. */
export async function waitForStatus(stack: Pick<TradeStack, "service" | "partner">, orderId: string, status: string, timeoutMs = DEFAULT_WAIT_MS) {
  return waitFor(`order ${orderId} to be ${status}`, async () => {
    const detail = await stack.service.api<Record<string, unknown> & { id: string; escrowOrderId: string; status: string; timeline: { event: string }[] }>("GET", `/orders/${orderId}`, { key: stack.partner.apiKey });
    return detail.body.status === status ? detail.body : undefined;
  }, timeoutMs);
}

/**
 * The service with chain settings but no node: enough for everything that only signs (POST /orders, its
 * checks, timers that need no transaction). Addresses are fixed so signatures can be checked.
 */
export const OFFLINE_CHAIN = {
  rpcUrl: "http://127.0.0.1:9",
  chainId: 31337,
  escrowAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
  usdcAddress: "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
  servicePrivateKey: devAccounts[DEV_ACCOUNT.service].privateKey,
  arbiterPrivateKey: devAccounts[DEV_ACCOUNT.arbiter].privateKey,
} as const;

export async function startOfflineOrderService(env: Record<string, string> = {}, options: Pick<ServiceOptions, "clock"> = {}): Promise<TestService> {
  return startTestService(env, { chain: OFFLINE_CHAIN, ...options });
}

const serviceProcessScript = fileURLToPath(new URL("./service-process.ts", import.meta.url));

/**
 * Starts the service in a child process on the stack's database, chain and indexer (configured from the
 * environment, as `npm start` reads it; `env` adds to it) and waits for its READY line.
 */
export async function spawnServiceProcess(stack: ChainStack, env: Record<string, string>, timeoutMs: number): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = spawn(process.execPath, [serviceProcessScript], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      INDEXER_SCHEMA: stack.indexerSchema,
      RPC_URL: stack.chainSettings.rpcUrl,
      CHAIN_ID: String(stack.chainSettings.chainId),
      ESCROW_ADDRESS: stack.chainSettings.escrowAddress,
      USDC_ADDRESS: stack.chainSettings.usdcAddress,
      SERVICE_PRIVATE_KEY: stack.chainSettings.servicePrivateKey,
      ARBITER_PRIVATE_KEY: stack.chainSettings.arbiterPrivateKey,
      ADMIN_TOKEN,
      PORT: "0",
      ...miningEnv(stack.mining),
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = await waitFor("the service process to be ready", async () => /READY (\S+)/.exec(output)?.[1] ?? (child.exitCode !== null ? "exited" : undefined), timeoutMs).catch(
    (error: unknown) => {
      child.kill("SIGKILL");
      throw error;
    },
  );
  if (baseUrl === "exited") throw new Error(`the service process exited with ${child.exitCode} before it was ready`);
  return { child, baseUrl };
}
