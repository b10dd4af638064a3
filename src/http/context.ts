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

/**
 * The token of the request's one `Authorization: Bearer <token>` header (the scheme name is
 * case-insensitive, RFC 9110 section 11.1). A repeated header gives none: Node keeps the first line and
 * drops the rest, while a proxy in front may have read another one, so which caller this is would be
 * ambiguous.
 */
export function bearerToken(ctx: Koa.Context | AppContext): string | undefined {
  let lines = 0;
  for (let i = 0; i < ctx.req.rawHeaders.length; i += 2) if (ctx.req.rawHeaders[i]!.toLowerCase() === "authorization") lines += 1;
  if (lines !== 1) return undefined;
  return /^Bearer +(\S+) *$/i.exec(ctx.get("Authorization"))?.[1];
}
