import type Koa from "koa";
import type { Pool } from "../db/pool.ts";
import { CsrfFailedError, ForbiddenError, UnauthorizedError } from "../domain/errors.ts";
import type { AppContext, AppState } from "../http/context.ts";
import type { RateLimits } from "../http/middleware/rate-limit.ts";
import { DASHBOARD_SESSION_REQUESTS_PER_MINUTE, limitSessions } from "../http/middleware/surface-limits.ts";
import type { AuditContext } from "../partners/audit.ts";
import { assertPartnerInGoodStanding, getPartner } from "../partners/partners.ts";
import { csrfTokenOf, sameToken } from "./credentials.ts";
import type { Member, Role } from "./members.ts";
import { findSession, SESSION_HOURS } from "./sessions.ts";

// The dashboard's guards, in the order of decisions section 18: session (401 UNAUTHORIZED), then CSRF on
// every change (403 CSRF_FAILED), then role (403 FORBIDDEN), then, on a change, the partner's standing
// (403 PARTNER_INACTIVE, PARTNER_SUSPENDED). They are each route's own guards.

export const SESSION_COOKIE = "offramp_dashboard";
const COOKIE_PATH = "/dashboard";

const RANK: Record<Role, number> = { VIEWER: 0, DEVELOPER: 1, OWNER: 2 };
const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

interface SessionState {
  member: Member;
  token: string;
}

// Kept beside the request's state rather than in AppState: only dashboard routes have a member.
const sessions = new WeakMap<object, SessionState>();

export function currentSession(ctx: AppContext): SessionState {
  const session = sessions.get(ctx.state);
  if (!session) throw new Error("dashboard route reached without a session");
  return session;
}

export function currentMember(ctx: AppContext): Member {
  return currentSession(ctx).member;
}

/** Who changes what, from where: the audit context of a member's request. */
export function memberAudit(ctx: AppContext): AuditContext {
  const member = currentMember(ctx);
  return { actor: { type: "MEMBER", id: member.id, email: member.email }, address: ctx.ip };
}

export function readSessionCookie(ctx: AppContext): string | undefined {
  for (const part of ctx.get("Cookie").split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === SESSION_COOKIE) return part.slice(index + 1).trim() || undefined;
  }
  return undefined;
}

/** `HttpOnly; SameSite=Strict`, and `Secure` outside the sandbox; set by hand so a TLS proxy in front does not make Koa refuse it. */
export function setSessionCookie(ctx: AppContext, token: string, secure: boolean): void {
  const attributes = [`${SESSION_COOKIE}=${token}`, `Path=${COOKIE_PATH}`, `Max-Age=${SESSION_HOURS * 3600}`, "HttpOnly", "SameSite=Strict"];
  if (secure) attributes.push("Secure");
  ctx.append("Set-Cookie", attributes.join("; "));
}

export function clearSessionCookie(ctx: AppContext, secure: boolean): void {
  const attributes = [`${SESSION_COOKIE}=`, `Path=${COOKIE_PATH}`, "Max-Age=0", "HttpOnly", "SameSite=Strict"];
  if (secure) attributes.push("Secure");
  ctx.append("Set-Cookie", attributes.join("; "));
}

/**
/**
 * The guards of a session route: a live session, the CSRF header on every change, at least `role`, and
 * on every change a partner in good standing (403 PARTNER_INACTIVE or PARTNER_SUSPENDED, as its API key
 * gets; not for `whilePartnerInactive` routes: signing out). Dashboard answers are never cached. Each
 * member's sessions share one rate-limit window; a refused cookie is counted against its address
 * (decisions 19).
 */
export function sessionGuards(pool: Pool, role: Role, rateLimits: RateLimits, options: { whilePartnerInactive?: boolean } = {}): Koa.Middleware<AppState>[] {
  const live: Koa.Middleware<AppState> = async (ctx, next) => {
    ctx.set("Cache-Control", "no-store");
    const token = readSessionCookie(ctx);
    const member = token ? await findSession(pool, token) : undefined;
    if (!token || !member) throw new UnauthorizedError("A valid dashboard session is required: sign in");
    sessions.set(ctx.state, { member, token });
    await next();
  };
  const session = limitSessions(live, { rateLimits, surface: "dashboard", limit: DASHBOARD_SESSION_REQUESTS_PER_MINUTE, holderOf: (ctx) => currentMember(ctx).id });
  const csrf: Koa.Middleware<AppState> = async (ctx, next) => {
    if (CHANGES.has(ctx.method)) {
      const presented = ctx.get("X-CSRF-Token");
      if (!presented || !sameToken(presented, csrfTokenOf(currentSession(ctx).token))) throw new CsrfFailedError();
    }
    await next();
  };
  const allowed: Koa.Middleware<AppState> = async (ctx, next) => {
    if (RANK[currentMember(ctx).role] < RANK[role]) throw new ForbiddenError(`This needs the ${role} role`);
    await next();
  };
  // Members of a partner that is not in good standing still read (and sign out), and change nothing.
  const partnerStanding: Koa.Middleware<AppState> = async (ctx, next) => {
    if (CHANGES.has(ctx.method) && !options.whilePartnerInactive) assertPartnerInGoodStanding(await getPartner(pool, currentMember(ctx).partnerId));
    await next();
  };
  return [session, csrf, allowed, partnerStanding];
}
