import { bodyParser } from "@koa/bodyparser";
import type Koa from "koa";
import { ValidationError } from "../../domain/errors.ts";
import type { AppState } from "../context.ts";

export const BODY_LIMIT = "64kb";

/**
 * JSON bodies only, at most 64 KiB, kept raw too (idempotency hashes the exact bytes). A body that is
 * not JSON, not an object, or too large is VALIDATION_ERROR (decisions section 11).
 */
export function jsonBody(): Koa.Middleware<AppState> {
  const parse = bodyParser({ enableTypes: ["json"], jsonLimit: BODY_LIMIT, jsonStrict: false, encoding: "utf-8" });
  return async (ctx, next) => {
    // Simulators of outside services speak those services' own formats (the KYC page posts a form).
    if (ctx.path.startsWith("/simulators/")) return next();
    if (["POST", "PATCH", "PUT"].includes(ctx.method)) {
      const hasBody = Number(ctx.get("Content-Length") || 0) > 0 || ctx.get("Transfer-Encoding") !== "";
      if (hasBody && !ctx.is("application/json")) throw new ValidationError("Request bodies must be JSON (Content-Type: application/json)");
      await parse(ctx as unknown as Koa.Context, async () => undefined);
      const body: unknown = ctx.request.body;
      if (hasBody && (body === null || typeof body !== "object" || Array.isArray(body))) {
        throw new ValidationError("The request body must be a JSON object");
      }
      if (!hasBody) ctx.request.body = {};
    }
    await next();
  };
}
