import { createHash, timingSafeEqual } from "node:crypto";
import type Koa from "koa";
import type { Queryable } from "../../db/pool.ts";
import { RateLimitedError, UnauthorizedError } from "../../domain/errors.ts";
import { bearerToken, type AppState } from "../context.ts";
import { countRequest, uncountRequest } from "./rate-limit.ts";

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
 * are limited per client address in the shared rate-limit windows (decisions section 19): every attempt
 * is counted before its token is compared and taken back when it succeeds, so parallel guesses cannot
 * all pass a check made before any was counted; an address past the limit gets 429 without its token
 * being compared, the right one included, so the token cannot be guessed at speed.
 */
export function adminAuth(adminToken: string, db: Queryable): Koa.Middleware<AppState> {
  const expected = digest(adminToken);
  return async (ctx, next) => {
    const bucket = `admin-auth-failures:${ctx.ip}`;
    const attempt = await countRequest(db, bucket, ADMIN_AUTH_FAILURES_PER_MINUTE);
    if (attempt.exceeded) throw tooManyFailures(attempt.retryAfterSeconds);
    const token = bearerToken(ctx);
    if (token === undefined || !timingSafeEqual(digest(token), expected)) throw new UnauthorizedError();
    await uncountRequest(db, bucket);
    await next();
  };
}
