import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type Koa from "koa";
import type { Pool } from "../../db/pool.ts";
import { IdempotencyKeyReusedError, ValidationError } from "../../domain/errors.ts";
import { currentPartner, type AppState } from "../context.ts";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const RETENTION_HOURS = 24;
const IN_FLIGHT_WAIT_MS = 10_000;

function requestHash(ctx: Koa.ParameterizedContext<AppState>): string {
  const raw = (ctx.request as { rawBody?: string }).rawBody ?? "";
  return createHash("sha256").update(`${ctx.method} ${ctx.path}\n${raw}`).digest("hex");
}

/**
 * `Idempotency-Key` (decisions section 11): the first request with a key is recorded before it runs;
 * a repeat within 24 hours with the same method, path and body gets the first response replayed
 * (waiting while the first is still running); a different body gets 409 IDEMPOTENCY_KEY_REUSED.
 * 5xx responses are not kept, so the partner can retry them. The first response's body is serialised
 * here, once: those exact bytes are sent and kept (a TEXT column), and a replay sends them again.
 */
export function idempotency(pool: Pool): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const key = ctx.get("Idempotency-Key");
    if (!key) return next();
    if (!KEY_PATTERN.test(key)) throw new ValidationError("Idempotency-Key must be 1 to 255 printable ASCII characters");
    const partnerId = currentPartner(ctx).id;
    const hash = requestHash(ctx);

    const claimed = await pool.query(
      `INSERT INTO idempotency_keys (partner_id, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (partner_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, response_status = NULL,
         response_body = NULL, response_text = NULL, created_at = now()
       WHERE idempotency_keys.created_at < now() - make_interval(hours => ${RETENTION_HOURS})
       RETURNING key`,
      [partnerId, key, hash],
    );
    if (claimed.rowCount === 0) {
      const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
      for (;;) {
        const { rows } = await pool.query<{ request_hash: string; response_status: number | null; response_body: unknown; response_text: string | null }>(
          "SELECT request_hash, response_status, response_body, response_text FROM idempotency_keys WHERE partner_id = $1 AND key = $2",
          [partnerId, key],
        );
        const previous = rows[0];
        if (!previous) return idempotency(pool)(ctx, next); // the first attempt failed with a 5xx and was released
        if (previous.request_hash !== hash) throw new IdempotencyKeyReusedError();
        if (previous.response_status !== null) {
          ctx.status = previous.response_status;
          ctx.type = "application/json";
          // (response_body: a row written before response_text existed.)
          ctx.body = previous.response_text ?? JSON.stringify(previous.response_body ?? null);
          ctx.set("Idempotent-Replayed", "true");
          return;
        }
        if (Date.now() > deadline) throw new IdempotencyKeyReusedError("A request with this Idempotency-Key is still being processed");
        await sleep(50);
      }
    }

    try {
      await next();
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status >= 500) {
        await pool.query("DELETE FROM idempotency_keys WHERE partner_id = $1 AND key = $2", [partnerId, key]);
      } else {
        const { code, message } = error as { code?: string; message?: string };
        // The body errorResponses() will send for it (http/errors.ts), serialised as Koa serialises it.
        await pool.query(
          "UPDATE idempotency_keys SET response_status = $3, response_text = $4 WHERE partner_id = $1 AND key = $2",
          [partnerId, key, status, JSON.stringify({ error: code, message })],
        );
      }
      throw error;
    }
    const text = JSON.stringify(ctx.body ?? null);
    ctx.type = "application/json";
    ctx.body = text; // sent as kept: the bytes a replay sends
    await pool.query(
      "UPDATE idempotency_keys SET response_status = $3, response_text = $4 WHERE partner_id = $1 AND key = $2",
      [partnerId, key, ctx.status, text],
    );
  };
}

/** Removes the records past their retention (a periodic maintenance task). */
export async function pruneIdempotencyKeys(pool: Pool): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => ${RETENTION_HOURS})`);
  return rowCount ?? 0;
}
