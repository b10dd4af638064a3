import type http from "node:http";
import { parseEther, type Hex } from "viem";
import type { Registry } from "prom-client";
import type { AddressInfo } from "node:net";
import { parseGwei } from "viem";
import { escrowAbi } from "./chain/escrow-abi.ts";
import { createEscrowGateway, type ChainSettings, type EscrowGateway } from "./chain/escrow-gateway.ts";
import { createTransactionSender, type TransactionSender } from "./chain/transaction-sender.ts";
import { watchTreasury, type TreasuryWatch } from "./chain/treasury.ts";
import { registerSignerBalanceMetrics, signerBalanceReadiness, watchSignerBalances, type SignerBalanceWatch } from "./chain/signer-balance.ts";
import type { Config } from "./config.ts";
import { adminApi } from "./app/admin-api.ts";
import { partnerApi } from "./app/partner-api.ts";
import { dashboardModule } from "./dashboard/module.ts";
import { migrate } from "./db/migrate.ts";
import { createPool, type Pool, type PoolClient } from "./db/pool.ts";
import { loadSanctionsList, type SanctionsList } from "./domain/sanctions.ts";
import { createHttpServer } from "./http/server.ts";
import { createApp, type Surface } from "./http/app.ts";
import { createBanxicoSieClient } from "./integrations/banxico-sie.ts";
import { createCepPortalClient } from "./integrations/cep-portal.ts";
import { createFallbackRateClient } from "./integrations/fallback-rate.ts";
import { createKycProviderClient, type KycProviderClient } from "./integrations/kyc-provider.ts";
import { inTransaction, startJobs, type PgBoss } from "./jobs/boss.ts";
import { KYC_CALLBACK_PATH } from "./kyc/callback-routes.ts";
import type { Logger } from "./logger.ts";
import { applyBuyerKycCallback } from "./market/kyc.ts";
import { marketModule, marketPermits } from "./market/module.ts";
import type { PermitIssuer } from "./market/permits.ts";
import type { OrderCreationDeps } from "./orders/create-order.ts";
import type { OrderViewContext } from "./orders/queries.ts";
import type { OrderEffectPorts } from "./orders/store.ts";
import { createPaymentVerifier } from "./payments/verification.ts";
import { createExchangeRates, type ExchangeRates } from "./rates/exchange-rates.ts";
import { sandboxSecrets, type SandboxSecrets } from "./sandbox/secrets.ts";
import { createSimulators, sandboxSurface, SIMULATOR_PREFIX, type SandboxSimulators } from "./sandbox/surface.ts";
import { indexerFollowingReadiness, registerIndexerFollowingMetrics, watchIndexerFollowing, type IndexerFollowWatch } from "./sync/indexer-following.ts";
import { createEscrowEventConsumer, registerChainReorgMetrics, rowFromChainLog, type EscrowEventConsumer } from "./sync/escrow-events.ts";
import { createEscrowReconciliation, registerReconciliationMetrics, type EscrowReconciliation } from "./sync/escrow-reconciliation.ts";
import { checkWebhookUrlSyntax } from "./webhooks/url-guard.ts";
import { startMaintenance } from "./workers/maintenance.ts";
import { startOrderCountFolding } from "./workers/order-count-folding.ts";
import { CHAIN_SEND_QUEUE, createOrderQueues, type ChainSendJob } from "./jobs/queues.ts";
import { orderEffectPorts, startOrderWorkers, type EscrowLockClock } from "./workers/order-effects.ts";
import { startPaymentVerificationWorker } from "./workers/payment-verification.ts";
import { startWebhookDelivery } from "./workers/webhook-deliveries.ts";
import { pruneIdempotencyKeys } from "./http/middleware/idempotency.ts";
import { pruneDashboard } from "./dashboard/maintenance.ts";
import { pruneRateLimitWindows } from "./http/middleware/rate-limit.ts";
import { pruneMarketSignIns } from "./market/auth.ts";
import { createRateLimits, systemClock, type Clock, type RateLimits } from "./http/middleware/rate-limit.ts";
import { createPartnerCredentials, type PartnerCredentials } from "./partners/credential-cache.ts";

// The composition root: the one place that builds the service's parts and hands each what it needs.

export type { SandboxSimulators };

/** Per-call timeout for session creation at the KYC provider; past it, KYC_SESSION_FAILED. */
const KYC_PROVIDER_TIMEOUT_MS = 15_000;
/** Deadline of one CEP lookup (query and download). */
const CEP_TIMEOUT_MS = 20_000;
/** How often the orders' counter ledger is folded (workers/order-count-folding.ts). */
const ORDER_COUNT_FOLD_INTERVAL_MS = 5_000;

export interface RunningService {
  baseUrl: string;
  pool: Pool;
  boss: PgBoss;
  simulators: SandboxSimulators | undefined;
  /** In sandbox: the secrets generated for DATA_DIR that the simulators and the clients share. */
  sandboxSecrets: SandboxSecrets | undefined;
  /** Present when the service was given a chain: signer, escrow reads, the once-only sender. */
  chain: { gateway: EscrowGateway; sender: TransactionSender; consumer: EscrowEventConsumer | undefined; reconciliation: EscrowReconciliation | undefined } | undefined;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  databaseUrl: string;
  adminToken: string;
  logger: Logger;
  /** The chain and contracts; without them the order routes are not served (foundation-only runs). */
  chain?: ChainSettings;
  /** Ponder's schema to consume escrow events from; without it no chain event reaches the orders. */
  indexerSchema?: string;
  /** The clock rate-limit windows are counted on (tests pass a fixed one); the system clock otherwise. */
  clock?: Clock;
}

async function listen(server: http.Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}

/** The outside services' clients, and in sandbox their simulators on the service's own address. */
interface OutsideServices {
  secrets: SandboxSecrets | undefined;
  simulators: SandboxSimulators | undefined;
  rates: ExchangeRates;
  kycProvider: KycProviderClient;
  cepBaseUrl: string;
}

async function outsideServices(config: Config, pool: Pool, logger: Logger, baseUrl: string): Promise<OutsideServices> {
  const secrets = config.sandbox ? await sandboxSecrets(config.dataDir) : undefined;
  const banxicoToken = config.banxicoToken ?? secrets?.banxicoToken ?? "";
  const kycCredentials = { apiKey: config.kycProviderApiKey ?? secrets?.kycApiKey ?? "", secret: config.kycProviderSecret ?? secrets?.kycSecret ?? "" };
  const simulators = config.sandbox
    ? createSimulators({ pool, banxicoToken, kycCredentials, usdMxn: config.sandboxUsdMxn, baseUrl, kycCallbackPath: KYC_CALLBACK_PATH })
    : undefined;
  const rateClients = [
    createBanxicoSieClient({ baseUrl: config.banxicoSieUrl ?? `${baseUrl}${SIMULATOR_PREFIX.banxico}`, token: banxicoToken }),
    createFallbackRateClient({ baseUrl: config.fallbackRateUrl ?? `${baseUrl}${SIMULATOR_PREFIX.fallbackRate}` }),
  ];
  return {
    secrets,
    simulators,
    rates: createExchangeRates(pool, rateClients, config.rateValiditySeconds, logger),
    kycProvider: createKycProviderClient({ baseUrl: config.kycProviderUrl ?? `${baseUrl}${SIMULATOR_PREFIX.kyc}`, ...kycCredentials, timeoutMs: KYC_PROVIDER_TIMEOUT_MS }),
    cepBaseUrl: config.cepUrl ?? `${baseUrl}${SIMULATOR_PREFIX.cep}`,
  };
}

/** What the service builds over a chain: the signer and sender, order creation, lock permits, the event consumer. */
interface ChainParts {
  gateway: EscrowGateway;
  sender: TransactionSender;
  sanctions: SanctionsList;
  view: OrderViewContext;
  creation: OrderCreationDeps;
  permits: PermitIssuer;
  consumer: EscrowEventConsumer | undefined;
  /** The escrow's logs read from the chain for what the indexer did not deliver. */
  reconciliation: EscrowReconciliation | undefined;
  /** The service signer's and the arbiter's gas money (decisions 7). */
  signerBalances: SignerBalanceWatch;
  /** The escrow's treasury, read every 30 s for order terms (decisions 5). */
  treasury: TreasuryWatch;
  /** Whether the indexer follows the chain (behind, or off it after a reorganisation deeper than its finality). */
  indexerFollowing: IndexerFollowWatch | undefined;
}

async function chainParts(options: ServiceOptions & { chain: ChainSettings }, pool: Pool, boss: PgBoss, ports: OrderEffectPorts): Promise<ChainParts> {
  const { config, logger, chain: settings } = options;
  const gateway = createEscrowGateway(settings);
  const maxFeePerGas = config.maxFeePerGasGwei === undefined ? undefined : parseGwei(config.maxFeePerGasGwei);
  const sender = createTransactionSender({ pool, gateway, logger, confirmations: config.chainConfirmations, maxFeePerGas });
  const sanctions = await loadSanctionsList(config.sanctionsListFiles);
  const treasury = watchTreasury({ read: () => gateway.publicClient.readContract({ address: settings.escrowAddress, abi: escrowAbi, functionName: "treasury" }), logger });
  const view = {
    chain: { chainId: settings.chainId, escrowAddress: settings.escrowAddress, tokenAddress: settings.usdcAddress },
    listingWindowSeconds: config.listingTimeoutSeconds,
    lockWindowSeconds: config.lockWindowSeconds,
  };
  const creation = {
    pool,
    ports,
    sanctions,
    timing: { depositTimeoutSeconds: config.depositTimeoutSeconds, listingTimeoutSeconds: config.listingTimeoutSeconds, lockWindowSeconds: config.lockWindowSeconds },
    chain: {
      chainId: settings.chainId,
      escrowAddress: settings.escrowAddress,
      usdcAddress: settings.usdcAddress,
      signTerms: gateway.signTerms,
      treasuryAddress: treasury.current,
    },
  };
  // Lock permits (issue 14): the market's issuance, which the sandbox lock helper goes through too.
  const permits = marketPermits({ config, pool, gateway, sanctions });
  const consumer = options.indexerSchema
    ? createEscrowEventConsumer({
        pool,
        ports,
        logger,
        indexerSchema: options.indexerSchema,
        confirmations: config.chainConfirmations,
        isSanctioned: sanctions.isSanctioned,
        sanctionsEntry: sanctions.entryFor,
        refundGraceSeconds: escrowRefundGrace(gateway),
        // A settled transaction of ours a reorganisation removed goes back to the sender's queue, in the
        // transaction that reports it (the consumer's finding or the reconciliation's).
        resendTransaction: async (tx: PoolClient, transactionId: string) => {
          await boss.send(CHAIN_SEND_QUEUE, { transactionId } satisfies ChainSendJob, inTransaction(tx));
        },
      })
    : undefined;
  const signerBalances = watchSignerBalances({
    publicClient: gateway.publicClient,
    signers: [
      { role: "service", address: gateway.service.address },
      { role: "arbiter", address: gateway.arbiter.address },
    ],
    minimumWei: parseEther(config.signerMinBalanceEth),
    logger,
  });
  const indexerFollowing = options.indexerSchema
    ? watchIndexerFollowing({ db: pool, indexerSchema: options.indexerSchema, publicClient: gateway.publicClient, logger })
    : undefined;
  // What the indexer did not deliver in time is read from the chain (sync/escrow-reconciliation.ts).
  const reconciliation = consumer && options.indexerSchema
    ? createEscrowReconciliation({
        pool,
        logger,
        indexerSchema: options.indexerSchema,
        intervalMs: config.chainReconcileIntervalSeconds * 1000,
        apply: consumer.applyFromChain,
        orphan: consumer.orphanFromChain,
        transactionRemoved: consumer.transactionRemoved,
        chain: {
          finalEnoughBlock: async () => {
            const head = await gateway.publicClient.getBlockNumber({ cacheTime: 0 });
            return head > BigInt(config.chainConfirmations) ? head - BigInt(config.chainConfirmations) : 0n;
          },
          escrowEvents: async (from, to) => (await gateway.escrowLogs(from, to)).map((log) => rowFromChainLog(settings.chainId, log)),
          blockTimestamp: (blockHash) => gateway.blockTimestamp(blockHash as Hex),
          blockHash: (number) => gateway.blockHash(number),
          transactionMined: async (hash) => (await gateway.transactionReceipt(hash as Hex)) !== undefined,
        },
      })
    : undefined;
  return { gateway, sender, sanctions, view, creation, permits, consumer, reconciliation, signerBalances, treasury, indexerFollowing };
}

/** The queue workers of this process: order timers and chain sends, and with a chain the CEP checks. */
async function startWorkers(deps: { options: ServiceOptions; pool: Pool; boss: PgBoss; ports: OrderEffectPorts; chain: ChainParts | undefined; cepBaseUrl: string }): Promise<void> {
  const { options, pool, boss, ports, chain } = deps;
  const { logger } = options;
  const depositOutcome = chain && ((escrowOrderId: Hex, deadline: bigint) => chain.gateway.depositOutcome(escrowOrderId, deadline, options.config.chainConfirmations));
  await startOrderWorkers({ boss, pool, ports, sender: chain?.sender, logger, ...(chain && depositOutcome ? { escrow: escrowLockClock(chain.gateway), depositOutcome } : {}) });
  if (chain) {
    // Payment proof (issue 4): the CEP verification worker over the central bank's portal.
    const portal = createCepPortalClient({ baseUrl: deps.cepBaseUrl, timeoutMs: CEP_TIMEOUT_MS });
    const escrow = { publicClient: chain.gateway.publicClient, address: chain.gateway.settings.escrowAddress };
    const verifier = createPaymentVerifier({ pool, ports, portal, logger, escrow });
    await startPaymentVerificationWorker({ boss, pool, verifier, logger });
  }
}

/** The surfaces the app mounts, in order: partner API, admin API, sandbox, dashboard, market. */
function surfaces(deps: {
  options: ServiceOptions;
  pool: Pool;
  boss: PgBoss;
  ports: OrderEffectPorts;
  outside: OutsideServices;
  chain: ChainParts | undefined;
  baseUrl: string;
  credentials: PartnerCredentials;
  rateLimits: RateLimits;
}): Surface[] {
  const { options, pool, boss, ports, outside, chain, credentials, rateLimits } = deps;
  const { config, logger } = options;
  const checkWebhookUrl = (url: string) => checkWebhookUrlSyntax(url, config.webhookAllowPrivate);
  const sandbox = outside.simulators
    ? sandboxSurface({
        pool,
        simulators: outside.simulators,
        chain: chain && { gateway: chain.gateway, issuePermit: chain.permits, ports, listingWindowSeconds: config.listingTimeoutSeconds, lockWindowSeconds: config.lockWindowSeconds },
      })
    : undefined;
  const partner = partnerApi({
    pool,
    logger,
    sandbox: config.sandbox,
    rates: { rates: outside.rates, validitySeconds: config.rateValiditySeconds, quoteTtlSeconds: config.quoteTtlSeconds },
    kyc: { provider: outside.kycProvider, otherSession: (tx, decision) => applyBuyerKycCallback(tx, decision, { pool, ports }), rateLimits },
    orders: chain && { pool, ports, creation: chain.creation, view: chain.view },
  });
  const admin = adminApi({ pool, boss, ports, checkWebhookUrl, partnerChanged: credentials.forget, view: chain?.view, indexerSchema: options.indexerSchema, ...(chain ? { signers: chain.signerBalances.check } : {}) });
  // Partner dashboard (issue 16): /dashboard/v1, the page at /dashboard, operators' member and audit routes.
  const dashboard = dashboardModule({
    pool,
    boss,
    checkWebhookUrl,
    view: chain?.view,
    webhook: { timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate },
    secureCookie: !config.sandbox,
    publicUrl: config.publicUrl ?? deps.baseUrl,
    rateLimits,
    partnerChanged: credentials.forget,
    clock: options.clock ?? systemClock,
  });
  // Buyer market (issue 14): /market/v1 and its document, admin buyers, the page at /market.
  const market =
    chain &&
    marketModule({
      config,
      pool,
      logger,
      gateway: chain.gateway,
      permits: chain.permits,
      ports,
      kycProvider: outside.kycProvider,
      indexerSchema: options.indexerSchema,
      sandboxRoutes: sandbox?.marketRoutes,
      rateLimits,
      publicUrl: config.publicUrl ?? deps.baseUrl,
    });
  return [partner, admin, ...(sandbox ? [sandbox] : []), dashboard, ...(market ? [market] : [])];
}

/**
 * Starts the service's roles on an already-running database: migrations, the job queue and its workers,
 * the escrow event consumer, the HTTP API and, in sandbox, the simulators of the outside services
 * (mounted on the same server).
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, databaseUrl, logger } = options;
  await migrate(databaseUrl, logger);
  const pool = createPool(databaseUrl, 10, logger);
  const idempotencySessions = createPool(databaseUrl, 10, logger);
  const boss = await startJobs(databaseUrl, logger);
  // Issue 15: partner authentication and rate limiting answer from memory (no database round trip per request).
  const credentials = createPartnerCredentials({ db: pool, databaseUrl, logger });
  const rateLimits = createRateLimits({ db: pool, ...(options.clock ? { clock: options.clock } : {}), onFlushError: (error) => logger.warn({ err: error }, "rate-limit flush failed; retrying") });
  await credentials.ready;
  await startMaintenance(boss, logger, {
    pruneRateLimitWindows: () => pruneRateLimitWindows(pool),
    pruneIdempotencyKeys: () => pruneIdempotencyKeys(pool),
    pruneDashboard: () => pruneDashboard(pool),
    pruneMarketSignIns: () => pruneMarketSignIns(pool),
  });
  const webhooks = await startWebhookDelivery({ pool, boss, logger, config });
  const orderCounts = startOrderCountFolding({ pool, logger, intervalMs: ORDER_COUNT_FOLD_INTERVAL_MS });

  const server = createHttpServer();
  const baseUrl = await listen(server, config.port, config.host);
  const outside = await outsideServices(config, pool, logger, baseUrl);

  const ports = orderEffectPorts(boss);
  await createOrderQueues(boss);
  const chain = options.chain ? await chainParts({ ...options, chain: options.chain }, pool, boss, ports) : undefined;
  await startWorkers({ options, pool, boss, ports, chain, cepBaseUrl: outside.cepBaseUrl });
  chain?.consumer?.start();
  chain?.reconciliation?.start();

  const signerBalances = chain?.signerBalances;
  const operator = signerBalances && {
    reports: () => ({
      signerBalance: signerBalanceReadiness(signerBalances.current()),
      ...(chain.indexerFollowing ? { indexer: indexerFollowingReadiness(chain.indexerFollowing.current()) } : {}),
    }),
    registerMetrics: (registry: Registry) => {
      registerSignerBalanceMetrics(registry, signerBalances);
      if (chain.consumer) registerChainReorgMetrics(registry, chain.consumer);
      if (chain.reconciliation) registerReconciliationMetrics(registry, chain.reconciliation);
      if (chain.indexerFollowing) registerIndexerFollowingMetrics(registry, chain.indexerFollowing);
    },
  };
  const { app } = createApp({ config, pool, idempotencySessions, logger, adminToken: options.adminToken, credentials, rateLimits, surfaces: surfaces({ options, pool, boss, ports, outside, chain, baseUrl, credentials, rateLimits }), ...(operator ? { operator } : {}) });
  server.on("request", app.callback());
  logger.info({ baseUrl, sandbox: config.sandbox }, "API listening");

  let stopped = false;
  return {
    baseUrl,
    pool,
    boss,
    simulators: outside.simulators,
    sandboxSecrets: outside.secrets,
    chain: chain && { gateway: chain.gateway, sender: chain.sender, consumer: chain.consumer, reconciliation: chain.reconciliation },
    async stop() {
      if (stopped) return;
      stopped = true;
      chain?.signerBalances.stop();
      chain?.treasury.stop();
      chain?.indexerFollowing?.stop();
      await chain?.reconciliation?.stop();
      await chain?.consumer?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await webhooks.stop();
      await Promise.all([rateLimits.stop(), credentials.stop(), orderCounts.stop()]);
      await boss.stop({ graceful: true, timeout: 10_000 });
      await Promise.all([pool.end(), idempotencySessions.end()]);
    },
  };
}

/** The escrow's REFUND_GRACE_SECONDS (immutable): read once from the contract, again after a failed read. */
function escrowRefundGrace(gateway: EscrowGateway): () => Promise<number> {
  let grace: Promise<number> | undefined;
  return () =>
    (grace ??= gateway.publicClient
      .readContract({ address: gateway.settings.escrowAddress, abi: escrowAbi, functionName: "REFUND_GRACE_SECONDS" })
      .then(Number)
      .catch((error: unknown) => {
        grace = undefined;
        throw error;
      }));
}

/** The escrow's lock clock for the lock timers: effective expiry (moved by pauses) and pause state. */
function escrowLockClock(gateway: EscrowGateway): EscrowLockClock {
  return {
    lockExpiryOf: (escrowOrderId) => gateway.lockExpiryOf(escrowOrderId),
    paused: () => gateway.publicClient.readContract({ address: gateway.settings.escrowAddress, abi: escrowAbi, functionName: "paused" }),
  };
}
