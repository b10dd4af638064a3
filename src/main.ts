import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Config } from "./config.ts";
import { migrate } from "./db/migrate.ts";
import { createPool, type Pool } from "./db/pool.ts";
import { createEscrowGateway, type ChainSettings, type EscrowGateway } from "./chain/escrow-gateway.ts";
import { createTransactionSender, type TransactionSender } from "./chain/transaction-sender.ts";
import { loadSanctionsList } from "./domain/sanctions.ts";
import { operatorModule } from "./admin/module.ts";
import { createApp, type RouteGroups } from "./http/app.ts";
import { orderRoutes } from "./orders/routes.ts";
import { createOrderQueues, orderEffectPorts, startOrderWorkers, type EscrowLockClock } from "./workers/order-effects.ts";
import { escrowAbi } from "./chain/escrow-abi.ts";
import { sandboxOrderRoutes } from "./sandbox/order-routes.ts";
import { createEscrowEventConsumer, type EscrowEventConsumer } from "./sync/escrow-events.ts";
import { createBanxicoSieClient } from "./integrations/banxico-sie.ts";
import { createFallbackRateClient } from "./integrations/fallback-rate.ts";
import { startJobs, type PgBoss } from "./jobs/boss.ts";
import { scheduleMaintenance } from "./workers/maintenance.ts";
import type { Logger } from "./logger.ts";
import { createExchangeRates } from "./rates/exchange-rates.ts";
import { createBanxicoSieSimulator, createFrankfurterSimulator, type RateSimulator } from "./sandbox/simulators/rates.ts";
import type { KycProviderSimulator } from "./sandbox/simulators/kyc-provider.ts";
import { createSandboxKycSimulator, KYC_SIMULATOR_PREFIX, kycModule } from "./kyc/wiring.ts";
import { checkWebhookUrlSyntax } from "./webhooks/url-guard.ts";
import { webhookRouteModule } from "./webhooks/routes.ts";
import { startWebhookDelivery } from "./workers/webhook-deliveries.ts";
import { CEP_SIMULATOR_PREFIX, paymentsModule } from "./payments/wiring.ts";
import { createCepPortalSimulator, type CepPortalSimulator } from "./sandbox/simulators/cep-portal.ts";
import { sandboxSecrets, type SandboxSecrets } from "./sandbox/secrets.ts";
import { databaseSpeiPayments } from "./sandbox/spei-payments.ts";
import { marketModule, marketPermits } from "./market/module.ts";
import type { PermitIssuer } from "./market/permits.ts";
import { dashboardModule } from "./dashboard/module.ts";
import type { OrderViewContext } from "./orders/queries.ts";

export interface SandboxSimulators {
  banxico: RateSimulator;
  fallbackRate: RateSimulator;
  kyc: KycProviderSimulator;
  cep: CepPortalSimulator;
}

export interface RunningService {
  baseUrl: string;
  pool: Pool;
  boss: PgBoss;
  simulators: SandboxSimulators | undefined;
  /** In sandbox: the secrets generated for DATA_DIR that the simulators and the clients share. */
  sandboxSecrets: SandboxSecrets | undefined;
  /** Present when the service was given a chain: signer, escrow reads, the once-only sender. */
  chain: { gateway: EscrowGateway; sender: TransactionSender; consumer: EscrowEventConsumer | undefined } | undefined;
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

/**
 * Starts the service's roles on an already-running database: migrations, the job queue, the HTTP API
 * and, in sandbox, the simulators of the outside services (mounted on the same server).
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, databaseUrl, logger } = options;
  await migrate(databaseUrl, logger);
  const pool = createPool(databaseUrl, 10, logger);
  const boss = await startJobs(databaseUrl, logger);
  await scheduleMaintenance(boss, pool, logger);
  // Webhooks (issue 5): outbox delivery worker (binds recordEvent to this queue), GET /webhooks, admin deliveries.
  const webhooks = await startWebhookDelivery({ pool, boss, logger, config });

  const server = http.createServer();
  server.keepAliveTimeout = 5_000;
  const baseUrl = await listen(server, config.port, config.host);

  const secrets = config.sandbox ? await sandboxSecrets(config.dataDir) : undefined;
  const banxicoToken = config.banxicoToken ?? secrets?.banxicoToken ?? "";
  const kycCredentials = { apiKey: config.kycProviderApiKey ?? secrets?.kycApiKey ?? "", secret: config.kycProviderSecret ?? secrets?.kycSecret ?? "" };
  const simulators: SandboxSimulators | undefined = config.sandbox
    ? {
        banxico: createBanxicoSieSimulator({ token: banxicoToken, rate: config.sandboxUsdMxn }),
        fallbackRate: createFrankfurterSimulator({ rate: config.sandboxUsdMxn }),
        kyc: createSandboxKycSimulator(kycCredentials, baseUrl),
        // Its payments in the database: any instance's portal finds what another's `pay` recorded.
        cep: createCepPortalSimulator({ shared: databaseSpeiPayments(pool) }),
      }
    : undefined;
  const rates = createExchangeRates(
    pool,
    [
      createBanxicoSieClient({
        baseUrl: config.banxicoSieUrl ?? `${baseUrl}/simulators/banxico/SieAPIRest/service/v1`,
        token: banxicoToken,
      }),
      createFallbackRateClient({ baseUrl: config.fallbackRateUrl ?? `${baseUrl}/simulators/frankfurter/v1` }),
    ],
    config.rateValiditySeconds,
    logger,
  );
  const ports = orderEffectPorts(boss);
  await createOrderQueues(boss);
  const routeModules: ((groups: RouteGroups) => void)[] = [];
  let chain: RunningService["chain"];
  let permits: PermitIssuer | undefined;
  let orderView: OrderViewContext | undefined;
  if (options.chain) {
    const gateway = createEscrowGateway(options.chain);
    const sender = createTransactionSender({ pool, gateway, logger });
    const sanctions = await loadSanctionsList(config.sanctionsListFiles);
    const timing = { depositTimeoutSeconds: config.depositTimeoutSeconds, listingTimeoutSeconds: config.listingTimeoutSeconds, lockWindowSeconds: config.lockWindowSeconds };
    const view = {
      chain: { chainId: options.chain.chainId, escrowAddress: options.chain.escrowAddress, tokenAddress: options.chain.usdcAddress },
      listingWindowSeconds: config.listingTimeoutSeconds,
      lockWindowSeconds: config.lockWindowSeconds,
    };
    orderView = view;
    const creation = {
      pool,
      ports,
      sanctions,
      timing,
      chain: {
        chainId: options.chain.chainId,
        escrowAddress: options.chain.escrowAddress,
        usdcAddress: options.chain.usdcAddress,
        signTerms: gateway.signTerms,
        treasuryAddress: () => gateway.publicClient.readContract({ address: gateway.settings.escrowAddress, abi: escrowAbi, functionName: "treasury" }),
      },
    };
    routeModules.push(({ partner }) => orderRoutes(partner, { pool, ports, creation, view }));
    // Lock permits (issue 14): the market's issuance, which the sandbox lock helper goes through too.
    const issuePermit = marketPermits({ config, pool, gateway, sanctions });
    permits = issuePermit;
    if (config.sandbox) routeModules.push(({ partner }) => sandboxOrderRoutes(partner, { pool, gateway, issuePermit, listingWindowSeconds: config.listingTimeoutSeconds, lockWindowSeconds: config.lockWindowSeconds }));
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
        })
      : undefined;
    chain = { gateway, sender, consumer };
  }
  await startOrderWorkers({ boss, pool, ports, sender: chain?.sender, logger, ...(chain ? { escrow: escrowLockClock(chain.gateway), escrowStatus: chain.gateway.escrowStatus } : {}) });

  // Payment proof (issue 4): POST /orders/:id/payment, sandbox pay, the CEP verification worker.
  if (chain) {
    const payments = paymentsModule({ config, pool, boss, ports, logger, baseUrl, gateway: chain.gateway, simulator: simulators?.cep });
    routeModules.push(payments.routes);
    await payments.start();
  }

  chain?.consumer?.start();

  // KYC (issue 6): provider client, POST /users/:ref/kyc, sandbox decision, admin usage, provider callback.
  const kyc = kycModule({ config, credentials: kycCredentials, pool, logger, baseUrl, simulator: simulators?.kyc });

  // Operator surface (issue 7): admin orders and dispute resolution, reputation, machine, stats, revenue; the console at /admin.
  const operator = operatorModule({
    pool,
    ports,
    indexerSchema: options.indexerSchema,
    view: options.chain
      ? {
          chain: { chainId: options.chain.chainId, escrowAddress: options.chain.escrowAddress, tokenAddress: options.chain.usdcAddress },
          listingWindowSeconds: config.listingTimeoutSeconds,
          lockWindowSeconds: config.lockWindowSeconds,
        }
      : undefined,
  });

  // Buyer market (issue 14): /market/v1 and its document, admin buyers, sandbox chain and faucet, the page at /market.
  const market =
    chain && permits
      ? marketModule({ config, pool, logger, gateway: chain.gateway, permits, ports, kycProvider: kyc.provider, kycSimulator: simulators?.kyc, cepSimulator: simulators?.cep, indexerSchema: options.indexerSchema })
      : undefined;

  // Partner dashboard (issue 16): /dashboard/v1, the page at /dashboard, operators' member and audit routes.
  const dashboard = dashboardModule({
    pool,
    boss,
    checkWebhookUrl: (url) => checkWebhookUrlSyntax(url, config.webhookAllowPrivate),
    view: orderView,
    webhook: { timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate },
    secureCookie: !config.sandbox,
    publicUrl: baseUrl,
  });

  const { app } = createApp({
    config,
    pool,
    logger,
    rates,
    adminToken: options.adminToken,
    checkWebhookUrl: (url) => checkWebhookUrlSyntax(url, config.webhookAllowPrivate),
    simulators: simulators
      ? [
          { prefix: "/simulators/banxico/SieAPIRest/service/v1", router: simulators.banxico.router },
          { prefix: "/simulators/frankfurter/v1", router: simulators.fallbackRate.router },
          { prefix: KYC_SIMULATOR_PREFIX, router: simulators.kyc.router },
          { prefix: CEP_SIMULATOR_PREFIX, router: simulators.cep.router },
        ]
      : [],
    routeModules: [...routeModules, kyc.routes, webhookRouteModule({ pool, boss }), operator.routes, dashboard.routes, ...(market ? [market.routes] : [])],
    publicRouters: [kyc.callbackRouter, operator.consoleRouter, dashboard.pageRouter, ...(market ? [market.pageRouter] : [])],
    surfaces: [dashboard.surface, ...(market ? [market.surface] : [])],
  });
  server.on("request", app.callback());
  logger.info({ baseUrl, sandbox: config.sandbox }, "API listening");

  let stopped = false;
  return {
    baseUrl,
    pool,
    boss,
    simulators,
    sandboxSecrets: secrets,
    chain,
    async stop() {
      if (stopped) return;
      stopped = true;
      await chain?.consumer?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await webhooks.stop();
      await boss.stop({ graceful: true, timeout: 10_000 });
      await pool.end();
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
