import type Koa from "koa";
import {
  InvalidApiKeyError,
  IpNotAllowedError,
  MissingApiKeyError,
  RateLimitedError,
} from "../../domain/errors.ts";
import { isAddressAllowed, rateLimitAddress } from "../../domain/ip-allow-list.ts";
import { requestsPerMinuteFor, UNAUTHENTICATED_REQUESTS_PER_MINUTE } from "../../domain/tiers.ts";
import { apiKeyDigest, isWellFormedApiKey } from "../../partners/credentials.ts";
import type { PartnerCredentials } from "../../partners/credential-cache.ts";
import { assertPartnerInGoodStanding } from "../../partners/partners.ts";
import type { AppState } from "../context.ts";
import type { RateLimits } from "./rate-limit.ts";

/** The rate-limit bucket of a partner's API requests. */
export const partnerRateBucket = (partnerId: string) => `partner:${partnerId}`;

/**
 * Partner authentication and rate limiting for /api/v1, in the order of decisions section 3:
 * MISSING_API_KEY, INVALID_API_KEY, PARTNER_INACTIVE, PARTNER_SUSPENDED, IP_NOT_ALLOWED, RATE_LIMITED.
 * Every request is counted (a partner's window, or the client address's at the FREE rate when no valid
 * key is presented, an IPv6 address by its /64) so the rate-limit headers are on every response, errors included. Requests without
 * a valid key that exceed their address's window get 429 instead of 401, which caps key guessing.
 * A known key and a window far from its limit are answered from memory, without a database round trip.
 */
export function partnerAuth(deps: { credentials: PartnerCredentials; rateLimits: RateLimits }): Koa.Middleware<AppState> {
  const { credentials, rateLimits } = deps;
  return async (ctx, next) => {
    const presented = ctx.get("X-API-Key");
    // A cached partner and a window decided in memory come back as values, not promises: most requests
    // wait for nothing here (awaiting a value would still cost a turn of the microtask queue). The partner
    // is found by the key's digest itself, in memory or in its row: it is this key's. (Comparing digests
    // in variable time tells a caller nothing of any key.)
    const found = presented && isWellFormedApiKey(presented) ? credentials.find(apiKeyDigest(presented)) : undefined;
    const partner = found instanceof Promise ? await found : found;
    const authenticated = partner !== undefined;

    const counted = authenticated
      ? rateLimits.count(partnerRateBucket(partner.id), requestsPerMinuteFor(partner.tier, partner.limits))
      : rateLimits.count(`ip:${rateLimitAddress(ctx.ip)}`, UNAUTHENTICATED_REQUESTS_PER_MINUTE);
    const window = counted instanceof Promise ? await counted : counted;
    ctx.set("X-RateLimit-Limit", String(window.limit));
    ctx.set("X-RateLimit-Remaining", String(window.remaining));
    ctx.set("X-RateLimit-Reset", String(window.resetAt));

    if (!authenticated) {
      if (window.exceeded) throw new RateLimitedError(window.retryAfterSeconds);
      throw presented ? new InvalidApiKeyError() : new MissingApiKeyError();
    }
    assertPartnerInGoodStanding(partner);
    // The client's address is worked out only for a partner with an allow-list: Koa's `ip` reads and splits
    // the forwarding header on each request that asks.
    if (partner.ipAllowList.length > 0 && !isAddressAllowed(ctx.ip, partner.ipAllowList)) throw new IpNotAllowedError(`Address ${ctx.ip} is not on the allow-list`);
    if (window.exceeded) throw new RateLimitedError(window.retryAfterSeconds);

    ctx.state.partner = partner;
    await next();
  };
}
