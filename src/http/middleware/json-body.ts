import { bodyParser } from "@koa/bodyparser";
import type Koa from "koa";
import { ValidationError } from "../../domain/errors.ts";
import type { AppState } from "../context.ts";

export const BODY_LIMIT = "64kb";
const BODY_METHODS = new Set(["POST", "PATCH", "PUT"]);

/**
 * Whether every string (keys included) is well-formed Unicode. JSON may escape a lone surrogate
 * (`"\udfff"`), which no text holds and PostgreSQL refuses in JSON columns: such a body is refused whole.
 */
function wellFormed(value: unknown): boolean {
  // Iterative: a body nested thousands deep (it fits in 64 KiB) must not overflow the stack (a 500).
  const pending: unknown[] = [value];
  while (pending.length) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (!item.isWellFormed()) return false;
    } else if (item !== null && typeof item === "object") {
      for (const [key, field] of Object.entries(item)) {
        if (!key.isWellFormed()) return false;
        pending.push(field);
      }
    }
  }
  return true;
}

/**
 * JSON bodies only, at most 64 KiB, kept raw too (idempotency hashes the exact bytes). A body that is
 * not JSON, not an object, or too large is VALIDATION_ERROR (decisions section 11).
 */
export function jsonBody(): Koa.Middleware<AppState> {
  const parse = bodyParser({ enableTypes: ["json"], jsonLimit: BODY_LIMIT, jsonStrict: false, encoding: "utf-8" });
  const parseBody: Koa.Middleware<AppState> = async (ctx, next) => {
    const hasBody = Number(ctx.get("Content-Length") || 0) > 0 || ctx.get("Transfer-Encoding") !== "";
    if (hasBody && !ctx.is("application/json")) throw new ValidationError("Request bodies must be JSON (Content-Type: application/json)");
    try {
      await parse(ctx as unknown as Koa.Context, async () => undefined);
    } catch (error) {
      // Bytes that do not decode with their Content-Encoding (zlib's Z_DATA_ERROR, Z_BUF_ERROR...) are the client's error.
      if (/^Z_/.test(String((error as { code?: unknown }).code))) throw new ValidationError("The request body could not be decoded with its Content-Encoding");
      throw error;
    }
    const body: unknown = ctx.request.body;
    if (hasBody && (body === null || typeof body !== "object" || Array.isArray(body))) {
      throw new ValidationError("The request body must be a JSON object");
    }
    if (hasBody && !wellFormed(body)) throw new ValidationError("The request body holds text that is not valid Unicode (a lone surrogate escape)");
    if (!hasBody) ctx.request.body = {};
    await next();
  };
  // A method without a body goes on without an async frame of its own: most partner requests are GETs.
  return (ctx, next) => (BODY_METHODS.has(ctx.method) ? parseBody(ctx, next) : next());
}
