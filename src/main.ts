import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Config } from "./config.ts";
import { migrate } from "./db/migrate.ts";
import { createPool, type Pool } from "./db/pool.ts";
import { createApp } from "./http/app.ts";
import { createBanxicoSieClient } from "./integrations/banxico-sie.ts";
import { createFallbackRateClient } from "./integrations/fallback-rate.ts";
import { startJobs, type PgBoss } from "./jobs/boss.ts";
import { scheduleMaintenance } from "./jobs/maintenance.ts";
import type { Logger } from "./logger.ts";
import { createExchangeRates } from "./rates/exchange-rates.ts";
import { createBanxicoSieSimulator, createFrankfurterSimulator, type RateSimulator } from "./sandbox/simulators/rates.ts";
import type { KycProviderSimulator } from "./sandbox/simulators/kyc-provider.ts";
import { createSandboxKycSimulator, KYC_SIMULATOR_PREFIX, kycModule } from "./kyc/wiring.ts";
import { checkWebhookUrlSyntax } from "./webhooks/url-guard.ts";
import { webhookRouteModule } from "./webhooks/routes.ts";
import { startWebhookDelivery } from "./webhooks/worker.ts";

/** The token the sandbox central-bank simulator accepts when BANXICO_TOKEN is unset. */
export const SANDBOX_BANXICO_TOKEN = "sandbox-bmx-token";

export interface SandboxSimulators {
  banxico: RateSimulator;
  fallbackRate: RateSimulator;
  kyc: KycProviderSimulator;
}

export interface RunningService {
  baseUrl: string;
  pool: Pool;
  boss: PgBoss;
  simulators: SandboxSimulators | undefined;
  stop(): Promise<void>;
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
export async function startService(options: { config: Config; databaseUrl: string; adminToken: string; logger: Logger }): Promise<RunningService> {
  const { config, databaseUrl, logger } = options;
  await migrate(databaseUrl, logger);
  const pool = createPool(databaseUrl);
  const boss = await startJobs(databaseUrl, logger);
  await scheduleMaintenance(boss, pool, logger);
  // Webhooks (issue 5): outbox delivery worker (binds recordEvent to this queue), GET /webhooks, admin deliveries.
  const webhooks = await startWebhookDelivery({ pool, boss, logger, config });

  const server = http.createServer();
  server.keepAliveTimeout = 5_000;
  const baseUrl = await listen(server, config.port, config.host);

  const simulators: SandboxSimulators | undefined = config.sandbox
    ? {
        banxico: createBanxicoSieSimulator({ token: config.banxicoToken ?? SANDBOX_BANXICO_TOKEN, rate: config.sandboxUsdMxn }),
        fallbackRate: createFrankfurterSimulator({ rate: config.sandboxUsdMxn }),
        kyc: createSandboxKycSimulator(config, baseUrl),
      }
    : undefined;
  const rates = createExchangeRates(
    pool,
    [
      createBanxicoSieClient({
        baseUrl: config.banxicoSieUrl ?? `${baseUrl}/simulators/banxico/SieAPIRest/service/v1`,
        token: config.banxicoToken ?? SANDBOX_BANXICO_TOKEN,
      }),
      createFallbackRateClient({ baseUrl: config.fallbackRateUrl ?? `${baseUrl}/simulators/frankfurter/v1` }),
    ],
    config.rateValiditySeconds,
    logger,
  );
  // KYC (issue 6): provider client, POST /users/:ref/kyc, sandbox decision, admin usage, provider callback.
  const kyc = kycModule({ config, pool, logger, baseUrl, simulator: simulators?.kyc });

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
        ]
      : [],
    routeModules: [kyc.routes, webhookRouteModule({ pool, boss })],
    publicRouters: [kyc.callbackRouter],
  });
  server.on("request", app.callback());
  logger.info({ baseUrl, sandbox: config.sandbox }, "API listening");

  let stopped = false;
  return {
    baseUrl,
    pool,
    boss,
    simulators,
    async stop() {
      if (stopped) return;
      stopped = true;
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
