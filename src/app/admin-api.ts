import type { PgBoss } from "pg-boss";
import type { SignerBalance } from "../chain/signer-balance.ts";
import { adminDeliveryRoutes } from "../admin/delivery-routes.ts";
import { adminKycRoutes } from "../admin/kyc-routes.ts";
import { adminOrderRoutes } from "../admin/order-routes.ts";
import { adminOverviewRoutes } from "../admin/overview-routes.ts";
import { adminPartnerRoutes } from "../admin/partner-routes.ts";
import { consoleRouter } from "../console/routes.ts";
import type { Pool } from "../db/pool.ts";
import type { Surface } from "../http/app.ts";
import type { OrderViewContext } from "../orders/queries.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import type { WebhookUrlCheck } from "../webhooks/url-guard.ts";

/**
 * The operator surface (decisions section 12) under /admin/v1: partners, KYC usage, webhook deliveries,
 * stats and revenue, and the console page at /admin. The order routes need the chain's deposit settings
 * (the detail shows the deposit instructions), so they exist only when the service runs with a chain;
 * `indexerSchema` adds the on-chain escrow view and reputation.
 */
export function adminApi(deps: {
  pool: Pool;
  boss: PgBoss;
  ports: OrderEffectPorts;
  checkWebhookUrl: WebhookUrlCheck;
  /** Forgets a partner's cached credentials in this instance at once after a change (others hear a NOTIFY). */
  partnerChanged: (partnerId: string) => void;
  view: OrderViewContext | undefined;
  indexerSchema: string | undefined;
  /** With a chain: reads the signing keys' balances now (GET /admin/v1/signers). */
  signers?: () => Promise<SignerBalance[]>;
}): Surface {
  const { pool, view } = deps;
  return {
    routes: ({ admin }) => {
      adminPartnerRoutes(admin, { pool, checkWebhookUrl: deps.checkWebhookUrl, partnerChanged: deps.partnerChanged });
      adminKycRoutes(admin, { pool });
      adminDeliveryRoutes(admin, { pool, boss: deps.boss });
      adminOverviewRoutes(admin, { pool, ...(deps.signers ? { signers: deps.signers } : {}) });
      if (view) adminOrderRoutes(admin, { pool, ports: deps.ports, view, indexerSchema: deps.indexerSchema });
    },
    routers: [consoleRouter()],
  };
}
