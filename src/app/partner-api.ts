import type { Pool } from "../db/pool.ts";
import type { Surface } from "../http/app.ts";
import type { RateLimits } from "../http/middleware/rate-limit.ts";
import { healthRoutes } from "../http/health-routes.ts";
import type { KycProviderClient } from "../integrations/kyc-provider.ts";
import { kycCallbackRouter, type OtherKycSession } from "../kyc/callback-routes.ts";
import { kycRoutes } from "../kyc/routes.ts";
import type { Logger } from "../logger.ts";
import { orderRoutes, type OrderRouteDeps } from "../orders/routes.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { paymentRoutes } from "../payments/routes.ts";
import { quoteRoutes } from "../quotes/routes.ts";
import type { ExchangeRates } from "../rates/exchange-rates.ts";
import { exchangeRateRoutes } from "../rates/routes.ts";
import { userRoutes } from "../users/routes.ts";
import { partnerWebhookRoutes } from "../webhooks/partner-routes.ts";

/**
 * The partner API under /api/v1 (the spec's surface): health, rates, users, quotes, KYC and its provider
 * callback, webhook history, and, when the service has a chain, orders and payment proofs.
 */
export function partnerApi(deps: {
  pool: Pool;
  logger: Logger;
  sandbox: boolean;
  rates: { rates: ExchangeRates; validitySeconds: number; quoteTtlSeconds: number };
  kyc: { provider: KycProviderClient; otherSession: OtherKycSession; rateLimits: RateLimits };
  orders: (OrderRouteDeps & { ports: OrderEffectPorts }) | undefined;
}): Surface {
  const { pool, logger } = deps;
  return {
    routes: ({ partner }) => {
      healthRoutes(partner);
      exchangeRateRoutes(partner, { rates: deps.rates.rates, validitySeconds: deps.rates.validitySeconds });
      userRoutes(partner, { pool });
      quoteRoutes(partner, { pool, rates: deps.rates.rates, quoteTtlSeconds: deps.rates.quoteTtlSeconds });
      if (deps.orders) {
        orderRoutes(partner, deps.orders);
        paymentRoutes(partner, { pool, ports: deps.orders.ports });
      }
      kycRoutes(partner, { pool, provider: deps.kyc.provider, sandbox: deps.sandbox, logger });
      partnerWebhookRoutes(partner, { pool });
    },
    routers: [kycCallbackRouter({ pool, provider: deps.kyc.provider, otherSession: deps.kyc.otherSession, rateLimits: deps.kyc.rateLimits, logger })],
  };
}
