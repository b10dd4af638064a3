import type Koa from "koa";
import type { Logger } from "../logger.ts";
import type { PartnerWithSecrets } from "../partners/partners.ts";

export interface AppState {
  requestId: string;
  log: Logger;
  /** Set by partner authentication on /api/v1 routes. */
  partner?: PartnerWithSecrets;
  /** The path as logged, when the real one holds a secret (an invitation token). */
  logPath?: string;
}

export type AppContext = Koa.ParameterizedContext<AppState>;

/** The authenticated partner of a partner-API request (authentication has run before any route). */
export function currentPartner(ctx: AppContext): PartnerWithSecrets {
  const partner = ctx.state.partner;
  if (!partner) throw new Error("partner route reached without authentication");
  return partner;
}
