// The whole stack for the bench: Hardhat node + escrow + Ponder into a fresh database on the local
// PostgreSQL (test/support/trade-stack.ts), the service in a child process on that database and
// chain, the partner's webhook receiver, and a database pool of the bench's own for set-up and reads.
import type pg from "pg";
import { createPool } from "../../src/db/pool.ts";
import type { ServiceProcessSpec } from "../../test/support/service-process.ts";
import { ADMIN_TOKEN } from "../../test/support/constants.ts";
import { startChainStack, type ChainStack } from "../../test/support/chain-stack.ts";
import { TEST_SERVER_URL, throughLocalSocket } from "../../test/support/database.ts";
import { SELLER_CLABE } from "../../test/support/constants.ts";
import { spawnService, type ReadyChild } from "./child.ts";
import { httpRequest } from "./http.ts";
import { startReceiver, type WebhookReceiver } from "./receiver.ts";

export type Json = Record<string, unknown>;

export interface Partner {
  id: string;
  apiKey: string;
  webhookSecret: string;
}

/** A partner API call (`X-API-Key`) to one service instance. */
export type ApiCall = <T = Json>(key: string, method: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;

export interface BenchStack {
  chain: ChainStack;
  pool: pg.Pool;
  receiver: WebhookReceiver;
  service: ReadyChild;
  /** The service's configuration overrides (same on every restart). */
  serviceEnv: Record<string, string>;
  restartService(): Promise<ReadyChild>;
  /**
   * Another service instance on the same database, chain and indexer schema (the caller stops it).
   * Started with the same Node options as the stack's own (see `profileServices`).
   */
  spawnService(): Promise<ReadyChild>;
  /**
   * Node options of every service process started from now on (`restartService`, `spawnService`):
   * `--cpu-prof` into `dir`, or none when `dir` is undefined.
   */
  profileServices(dir: string | undefined): void;
  /** When each service process started by the stack was ready (monotonic µs), by pid. */
  serviceReadyAtUs: ReadonlyMap<number, number>;
  admin<T = Json>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** The partner API of the stack's own service instance. */
  api: ApiCall;
  /** The partner API of the instance at `baseUrl`. */
  apiAt(baseUrl: string): ApiCall;
  /** An ENTERPRISE partner whose webhook URL is the receiver; `fields` override. */
  createPartner(fields?: Json): Promise<Partner>;
  /**
   * `VACUUM (ANALYZE)` of the stack's database (the service's tables, pg-boss's and the indexer's): each
   * figure starts on tables without the dead rows of the figures before it, whatever the server's
   * autovacuum does (docs/benchmarks.md, stop 48). Returns the seconds it took.
   */
  vacuum(): Promise<number>;
  close(): Promise<void>;
}

/** Every bench partner's rate limit, set in the database past the admin API's maximum (see createPartner). */
export const BENCH_REQUESTS_PER_MINUTE = 100_000_000;

/**
 * Deposit deadlines are 24 h: the local chain's clock runs ahead of the wall clock whenever blocks come
 * faster than one a second (a Hardhat block's timestamp is at least its parent's plus one), and the
 * raw-throughput reference mines hundreds of blocks, which would push the default 30 min deadline of
 * the orders created after it into the chain's past.
 */
// TRUST_PROXY=1: the public order book is read by many visitors, each with its own per-address budget;
// the book's figure sends its requests from many X-Forwarded-For addresses (load.ts `requestsPerClient`).
const SERVICE_ENV = { DEPOSIT_TIMEOUT_SECONDS: "86400", TRUST_PROXY: "1" };

async function call<T>(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await httpRequest(url, {
    method,
    headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    timeoutMs: 60_000,
  });
  const { text } = response;
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed as T };
}

export async function startBenchStack(log: (line: string) => void): Promise<BenchStack> {
  const databaseServerUrl = await throughLocalSocket(TEST_SERVER_URL);
  const chain = await startChainStack({ databaseServerUrl });
  const cleanups: (() => Promise<void>)[] = [() => chain.close()];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    log(`chain ${chain.chain.rpcUrl}, escrow ${chain.deployment.escrowAddress}, indexer schema ${chain.indexerSchema}`);
    const pool = createPool(chain.databaseUrl, 6);
    cleanups.push(() => pool.end());
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const spec: ServiceProcessSpec = { env: SERVICE_ENV, databaseUrl: chain.databaseUrl, indexerSchema: chain.indexerSchema, chain: chain.chainSettings };
    let nodeArgs: string[] = [];
    const serviceReadyAtUs = new Map<number, number>();
    const startService = async () => {
      const started = await spawnService(spec, nodeArgs);
      serviceReadyAtUs.set(started.pid, started.readyAtUs);
      return started;
    };
    let service = await startService();
    cleanups.push(() => service.stop());
    log(`service pid ${service.pid} at ${service.baseUrl}`);
    const stack: BenchStack = {
      chain,
      pool,
      receiver,
      get service() {
        return service;
      },
      serviceEnv: SERVICE_ENV,
      async restartService() {
        await service.stop();
        service = await startService();
        return service;
      },
      spawnService: startService,
      serviceReadyAtUs,
      profileServices(dir) {
        nodeArgs = dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
      },
      admin: (method, path, body) => call(`${service.baseUrl}/admin/v1${path}`, method, { Authorization: `Bearer ${ADMIN_TOKEN}` }, body),
      api: (key, method, path, body) => call(`${service.baseUrl}/api/v1${path}`, method, { "X-API-Key": key }, body),
      apiAt: (baseUrl) => (key, method, path, body) => call(`${baseUrl}/api/v1${path}`, method, { "X-API-Key": key }, body),
      async createPartner(fields = {}) {
        const response = await stack.admin<Partner>("POST", "/partners", {
          name: "Bench Partner",
          tier: "ENTERPRISE",
          kycModel: "PARTNER_MANAGED",
          webhookUrl: receiver.url,
          ...fields,
        });
        if (response.status !== 201) throw new Error(`partner creation failed: ${response.status} ${JSON.stringify(response.body)}`);
        // Each figure measures with a partner of its own, whose budget no other figure spends; the admin
        // API caps requestsPerMinute at 100,000, which a fast machine passes within a figure's minute.
        await pool.query("UPDATE partners SET limits = limits || jsonb_build_object('requestsPerMinute', $2::int) WHERE id = $1", [response.body.id, BENCH_REQUESTS_PER_MINUTE]);
        return response.body;
      },
      async vacuum() {
        const started = Date.now();
        await pool.query("VACUUM (ANALYZE)");
        return (Date.now() - started) / 1000;
      },
      close: cleanup,
    };
    return stack;
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Registers a user (201, or 409 when it exists). */
export async function ensureUser(stack: Pick<BenchStack, "api">, partner: Partner, ref: string): Promise<void> {
  // Attested FULL: a bench user trades far past the KYC thresholds, which would refuse its orders.
  const kycAttestation = { level: "FULL", verifiedAt: new Date(Date.now() - 86_400_000).toISOString() };
  const response = await stack.api(partner.apiKey, "POST", "/users", { partnerUserRef: ref, kycAttestation });
  if (response.status !== 201 && response.status !== 409) throw new Error(`user ${ref}: ${response.status} ${JSON.stringify(response.body)}`);
}

/** POST /quotes then POST /orders (on the stack's instance, or another's `api`); returns the order create response. */
export async function quoteAndOrder(stack: Pick<BenchStack, "api">, partner: Partner, ref: string, amountUsdc: number): Promise<Json & { id: string; escrowOrderId: string; deposit: unknown }> {
  const quote = await stack.api<{ id: string }>(partner.apiKey, "POST", "/quotes", { type: "SELL", amountUsdc, partnerUserRef: ref });
  if (quote.status !== 201) throw new Error(`quote: ${quote.status} ${JSON.stringify(quote.body)}`);
  const order = await stack.api<Json & { id: string; escrowOrderId: string; deposit: unknown }>(partner.apiKey, "POST", "/orders", {
    quoteId: quote.body.id,
    partnerUserRef: ref,
    sellerClabe: SELLER_CLABE,
  });
  if (order.status !== 201) throw new Error(`order: ${order.status} ${JSON.stringify(order.body)}`);
  return order.body;
}

/**
 * Waits (bounded) until no webhook delivery is due: a figure that made many orders leaves a delivery
 * backlog the worker drains at its own pace, which the next figure (or figure 9's next slice) should
 * not pay for.
 */
export async function settleDeliveries(bench: Pick<BenchStack, "pool">, budgetMs: number, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const pending = await waitForNone(bench, "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at <= now() + interval '5 seconds'", [], budgetMs);
  if (pending > 0) log(`${pending} webhook deliveries still due after waiting ${budgetMs / 1000} s; going on`);
  else if (Date.now() - started > 1_000) log(`waited ${((Date.now() - started) / 1000).toFixed(1)} s for the webhook delivery backlog to drain`);
}

/** Polls `query` (a count, as `n`) until it returns 0 or `timeoutMs` passes; returns the last count. */
export async function waitForNone(bench: Pick<BenchStack, "pool">, query: string, values: unknown[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await bench.pool.query<{ n: number }>(query, values);
    const n = rows[0]!.n;
    if (n === 0 || Date.now() > deadline) return n;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
