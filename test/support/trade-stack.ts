import { spawn, type ChildProcess } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { SendOutcome, TransactionSender } from "../../src/chain/transaction-sender.ts";
import type { ServiceOptions } from "../../src/main.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { INTERVAL_CHAIN, defaultTradeChain, startChainStack, type ChainStack, type ChainStackOptions, type TradeChain } from "./chain-stack.ts";
import { ADMIN_TOKEN, SELLER_CLABE } from "./constants.ts";
import { startTestService, type TestService } from "./service.ts";
import { orphanWatchdogArgs } from "../../src/stack/orphan-watchdog.ts";

// A trade test's stack is the chain stack plus a service: what it imports from either comes from here.
export { freePort, INTERVAL_CHAIN, defaultTradeChain, nodeRpc, startChainStack, testNode, type ChainStack, type ChainStackOptions, type TestNode, type TradeChain } from "./chain-stack.ts";
export { SELLER_CLABE } from "./constants.ts";

export interface TradeStack extends Omit<ChainStack, "close"> {
  service: TestService;
  /** A partner with its credentials, created through the admin API. */
  partner: { id: string; apiKey: string; webhookSecret: string };
  close(): Promise<void>;
}

/**
 * Seconds from a transaction to its event reaching the service: none on automine; on an interval chain
 * its block, the confirmations on top and a poll of the indexer (9 s). A test that must act inside a
 * window that opens on chain (a lock) widens it by this, keeping the margin it has on automine.
 */
export const EVENT_DELAY_SECONDS = defaultTradeChain === "interval" ? (INTERVAL_CHAIN.blockMs * (INTERVAL_CHAIN.confirmations + 1) + INTERVAL_CHAIN.pollingMs) / 1000 : 0;

/** How long a trade step may take by default: three blocks, confirmations and polling on an interval chain. */
const DEFAULT_WAIT_MS = defaultTradeChain === "interval" ? 60_000 : 20_000;

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
  const child = spawn(process.execPath, [...orphanWatchdogArgs(), serviceProcessScript], {
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
