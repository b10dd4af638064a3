import { createHash, timingSafeEqual } from "node:crypto";
import type Koa from "koa";
import type { Pool } from "../../db/pool.ts";
import { RateLimitedError, UnauthorizedError } from "../../domain/errors.ts";
import { rateLimitAddress } from "../../domain/ip-allow-list.ts";
import { judgeAttempt, type FailureLimit } from "../auth-failures.ts";
import { bearerToken, type AppState } from "../context.ts";
import { countRequest, readWindow } from "./rate-limit.ts";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Failed admin authentications allowed per client address per minute; past it even the right token waits. */
export const ADMIN_AUTH_FAILURES_PER_MINUTE = 10;

/** 429 RATE_LIMITED saying what the limit is: failed authentications from this address, not a partner tier's rate. */
function tooManyFailures(retryAfterSeconds: number): InstanceType<typeof RateLimitedError> {
  const error = new RateLimitedError(retryAfterSeconds);
  error.message = `Too many failed admin authentications from this address (${ADMIN_AUTH_FAILURES_PER_MINUTE} a minute); retry after ${retryAfterSeconds} s`;
  return error;
}

/**
 * `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time; 401 UNAUTHORIZED otherwise. Failures
 * are limited per client address (an IPv6 address by its /64) in the shared rate-limit windows (decisions section 19): an address
 * past the limit gets 429 whatever its token, the right one included, so the token cannot be guessed at
 * speed. Each attempt is judged under a per-address lock (`judgeAttempt`), so racing guesses are
 * decided one after another against the failures counted so far: no more than the limit are ever let
 * through to their comparison's outcome.
 */
export function adminAuth(adminToken: string, pool: Pool): Koa.Middleware<AppState> {
  const expected = digest(adminToken);
  const failures: FailureLimit = {
    async exhausted(db, [bucket]) {
      const window = await readWindow(db, bucket!, ADMIN_AUTH_FAILURES_PER_MINUTE);
      return window.exceeded ? window.retryAfterSeconds : undefined;
    },
    async count(db, [bucket]) {
      await countRequest(db, bucket!, ADMIN_AUTH_FAILURES_PER_MINUTE);
    },
    refusal: tooManyFailures,
  };
  return async (ctx, next) => {
    const token = bearerToken(ctx);
    const right = token !== undefined && timingSafeEqual(digest(token), expected);
    await judgeAttempt(pool, [`admin-auth-failures:${rateLimitAddress(ctx.ip)}`], right ? undefined : new UnauthorizedError(), failures);
    await next();
  };
}
