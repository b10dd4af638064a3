import { adminDeliveryRoutes } from "../admin/delivery-routes.ts";
import type { Pool } from "../db/pool.ts";
import type { RouteGroups } from "../http/app.ts";
import { partnerWebhookRoutes } from "./partner-routes.ts";
import type { PgBoss } from "../jobs/boss.ts";

/** For createApp's `routeModules`: `GET /api/v1/webhooks` and the admin delivery routes. */
export function webhookRouteModule(deps: { pool: Pool; boss: PgBoss }): (groups: RouteGroups) => void {
  return ({ partner, admin }) => {
    partnerWebhookRoutes(partner, { pool: deps.pool });
    adminDeliveryRoutes(admin, deps);
  };
}
