import type Koa from "koa";
import { RateLimitedError, UnauthorizedError } from "../../domain/errors.ts";
import { rateLimitAddress } from "../../domain/ip-allow-list.ts";
import type { AppContext, AppState } from "../context.ts";
import type { RateLimits, RateLimitWindow } from "./rate-limit.ts";

// Rate limits of the surfaces other than the partner API (decisions section 19: "market sessions and
// dashboard sessions per session, and every route without a credential per address"), in the same
// shared fixed UTC-minute windows as the partner tiers (rate-limit.ts), with the same headers and 429.

/**
 * Requests a minute of one market buyer's sessions: the GROWTH tier's rate. The page sends at most about
 * 120 (it polls a trade every second, every half second while it waits for a lock to be indexed).
 */
export const MARKET_SESSION_REQUESTS_PER_MINUTE = 200;
/** Requests a minute of one dashboard member's sessions: the GROWTH tier's rate, far above what the page sends. */
export const DASHBOARD_SESSION_REQUESTS_PER_MINUTE = 200;
/**
 * Requests a minute from one client address (an IPv6 /64) to a route that takes no credential, or with a
 * credential the route refuses (an unknown session, an unsigned callback). High enough for the people
 * behind one office or carrier address; low enough that one address cannot keep the service busy.
 */
export const ADDRESS_REQUESTS_PER_MINUTE = 120;

/** The bucket of a client address on one surface: IPv6 counted by its /64. */
export const addressBucket = (surface: string, ctx: AppContext | Koa.Context) => `${surface}-ip:${rateLimitAddress(ctx.ip)}`;

/** Puts a window's X-RateLimit-* headers on the answer, and refuses the request past the limit (429 with Retry-After). */
export function applyWindow(ctx: AppContext | Koa.Context, window: RateLimitWindow): void {
  ctx.set("X-RateLimit-Limit", String(window.limit));
  ctx.set("X-RateLimit-Remaining", String(window.remaining));
  ctx.set("X-RateLimit-Reset", String(window.resetAt));
  if (!window.exceeded) return;
  const error = new RateLimitedError(window.retryAfterSeconds);
  error.message = `Too many requests (${window.limit} a minute); retry after ${window.retryAfterSeconds} s`;
  throw error;
}

/** A guard for routes without a credential: every request counted per client address. */
export function limitPerAddress(rateLimits: RateLimits, surface: string, limit = ADDRESS_REQUESTS_PER_MINUTE): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    applyWindow(ctx, await rateLimits.count(addressBucket(surface, ctx), limit));
    await next();
  };
}

export interface SessionLimit {
  rateLimits: RateLimits;
  /** Names the buckets: `<surface>-session:<key>` and `<surface>-ip:<address>`. */
  surface: string;
  /** Requests a minute of one session's holder. */
  limit: number;
  /** Who the admitted session is (the buyer's wallet, the member's id): all of one holder's sessions share a window. */
  holderOf: (ctx: AppContext) => string;
}

/**
 * Wraps a session guard. A request it admits is counted in its holder's window (signing in again gives
 * no fresh budget); one it refuses with 401 is counted per client address, and past that address's
 * limit answers 429 instead, so made-up tokens cost their sender's budget, never anyone else's.
 */
export function limitSessions(guard: Koa.Middleware<AppState>, options: SessionLimit): Koa.Middleware<AppState> {
  const { rateLimits, surface, limit, holderOf } = options;
  return async (ctx, next) => {
    let admitted = false;
    try {
      await guard(ctx, async () => {
        admitted = true;
        applyWindow(ctx, await rateLimits.count(`${surface}-session:${holderOf(ctx)}`, limit));
        await next();
      });
    } catch (error) {
      if (!admitted && error instanceof UnauthorizedError) applyWindow(ctx, await rateLimits.count(addressBucket(surface, ctx), ADDRESS_REQUESTS_PER_MINUTE));
      throw error;
    }
  };
}

/**
 * For a route whose credential is checked in the handler (a signed callback): requests it refuses with
 * 401 are counted per client address, and past the limit answer 429; accepted ones are never limited.
 */
export function limitRefusals(rateLimits: RateLimits, surface: string, limit = ADDRESS_REQUESTS_PER_MINUTE): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (error instanceof UnauthorizedError) applyWindow(ctx, await rateLimits.count(addressBucket(surface, ctx), limit));
      throw error;
    }
  };
}
