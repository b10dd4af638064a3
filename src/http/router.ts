import Router from "@koa/router";
import type { AppState } from "./context.ts";

/**
 * Every router of the service: paths match exactly, letter case and trailing slash included, so
 * `/ADMIN/v1/partners` or `/api/v1/health/` is never taken for a guarded route (decisions section 19).
 */
export function createRouter<State = AppState>(options: { prefix?: string } = {}): Router<State> {
  return new Router<State>({ ...options, sensitive: true, strict: true });
}
