import type Router from "@koa/router";
import type { Pool } from "../db/pool.ts";
import { consoleRouter } from "../console/routes.ts";
import type { RouteGroups } from "../http/app.ts";
import type { AppState } from "../http/context.ts";
import type { OrderViewContext } from "../orders/queries.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { adminOrderRoutes } from "./order-routes.ts";
import { adminOverviewRoutes } from "./overview-routes.ts";

export interface OperatorModule {
  /** For `createApp({ routeModules })`: admin orders, dispute resolution, reputation, machine, stats, revenue. */
  routes: (groups: RouteGroups) => void;
  /** For `createApp({ publicRouters })`: the console page at /admin and its scripts. */
  consoleRouter: Router<AppState>;
}

/**
 * The operator surface (decisions section 12). The order routes need the chain's deposit settings (the
 * detail shows the deposit instructions), so they exist only when the service runs with a chain, like
 * the partner order routes; `indexerSchema` adds the on-chain escrow view and reputation.
 */
export function operatorModule(options: { pool: Pool; ports: OrderEffectPorts; view: OrderViewContext | undefined; indexerSchema: string | undefined }): OperatorModule {
  const { pool, ports, view, indexerSchema } = options;
  return {
    routes: ({ admin }) => {
      adminOverviewRoutes(admin, { pool });
      if (view) adminOrderRoutes(admin, { pool, ports, view, indexerSchema });
    },
    consoleRouter: consoleRouter(),
  };
}
