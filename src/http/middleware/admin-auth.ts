import { createHash, timingSafeEqual } from "node:crypto";
import type Koa from "koa";
import { UnauthorizedError } from "../../domain/errors.ts";
import type { AppState } from "../context.ts";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time; 401 UNAUTHORIZED otherwise. */
export function adminAuth(adminToken: string): Koa.Middleware<AppState> {
  const expected = digest(adminToken);
  return async (ctx, next) => {
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get("Authorization"));
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) throw new UnauthorizedError();
    await next();
  };
}
