import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type Koa from "koa";
import { inUnitOfWork, type Pool, type PoolClient } from "../../db/pool.ts";
import { IdempotencyKeyReusedError, ValidationError } from "../../domain/errors.ts";
import { currentPartner, type AppState } from "../context.ts";

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const RETENTION_HOURS = 24;
const IN_FLIGHT_WAIT_MS = 10_000;
/** How long one attempt to claim waits on a request still running with the key before letting go of its session. */
const CLAIM_LOCK_TIMEOUT = "100ms";
const LOCK_NOT_AVAILABLE = "55P03";

interface Recorded {
  request_hash: string;
  response_status: number;
  response_body: unknown;
  response_text: string | null;
}

type Claim = { kind: "owner"; session: PoolClient } | { kind: "recorded"; record: Recorded } | { kind: "in-flight" };

function requestHash(ctx: Koa.ParameterizedContext<AppState>): string {
  const raw = (ctx.request as { rawBody?: string }).rawBody ?? "";
  return createHash("sha256").update(`${ctx.method} ${ctx.path}\n${raw}`).digest("hex");
}

/**
 * One attempt to claim the key. The claim is a row inserted in a transaction that stays open while the
 * request runs: others see it only once it is committed with its response, and if the process dies
 * mid-request the session ends, PostgreSQL rolls the row back and the partner's retry runs afresh. A
 * committed row without a response was left by an earlier version that committed its claims first; like
 * one past retention, it is claimed again.
 */
async function claim(sessions: Pool, partnerId: string, key: string, hash: string): Promise<Claim> {
  const session = await sessions.connect();
  try {
    // One round trip for both (a parameterless query may hold several statements).
    await session.query(`BEGIN; SET LOCAL lock_timeout = '${CLAIM_LOCK_TIMEOUT}'`);
    const claimed = await session.query(
      `INSERT INTO idempotency_keys (partner_id, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (partner_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, response_status = NULL,
         response_body = NULL, response_text = NULL, created_at = now()
       WHERE idempotency_keys.response_status IS NULL
          OR idempotency_keys.created_at < now() - make_interval(hours => ${RETENTION_HOURS})
       RETURNING key`,
      [partnerId, key, hash],
    );
    if (claimed.rowCount === 1) {
      // The request's own statements run in this transaction too: they wait for locks as anywhere else.
      await session.query("SET LOCAL lock_timeout TO DEFAULT");
      return { kind: "owner", session };
    }
    const { rows } = await session.query<Recorded>(
      "SELECT request_hash, response_status, response_body, response_text FROM idempotency_keys WHERE partner_id = $1 AND key = $2",
      [partnerId, key],
    );
    await session.query("COMMIT");
    session.release();
    return { kind: "recorded", record: rows[0]! };
  } catch (error) {
    // A session that cannot even roll back is closed rather than returned to the pool.
    const rolledBack = await session.query("ROLLBACK").then(() => true, () => false);
    session.release(rolledBack ? undefined : (error as Error));
    if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return { kind: "in-flight" };
    throw error;
  }
}

/**
 * `Idempotency-Key` (decisions section 11): a repeat within 24 hours with the same method, path and body
 * gets the first response (waiting while the first is still running); a different body gets 409
 * IDEMPOTENCY_KEY_REUSED. 5xx responses are not kept, so the partner can retry them. The first response's
 * body is serialised here, once: those exact bytes are sent and kept (a TEXT column), and a replay sends
 * them again.
 *
 * The handler runs as a unit of work in the claim's transaction (decisions section 15): its queries and
 * transactions on `pool` go to the claim's session, so the change and its answer commit together, in
 * one COMMIT. A crash before it leaves neither (the retry runs afresh), after it both (the retry gets the
 * answer); a 5xx rolls the change back with the claim.
 *
 * `sessions` is a pool of its own: each running request holds one of its sessions open (see claim()), and
 * drawing them from the pool the handlers use could leave every session waiting on a handler that waits
 * for a session (a handler's own `pool.connect()`, or a request without a key).
 */
export function idempotency(sessions: Pool, pool: Pool): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const key = ctx.get("Idempotency-Key");
    if (!key) return next();
    if (!KEY_PATTERN.test(key)) throw new ValidationError("Idempotency-Key must be 1 to 255 printable ASCII characters");
    const partnerId = currentPartner(ctx).id;
    const hash = requestHash(ctx);

    const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
    let outcome = await claim(sessions, partnerId, key, hash);
    while (outcome.kind === "in-flight") {
      if (Date.now() > deadline) throw new IdempotencyKeyReusedError("A request with this Idempotency-Key is still being processed");
      await sleep(50);
      outcome = await claim(sessions, partnerId, key, hash);
    }
    if (outcome.kind === "recorded") {
      const { record } = outcome;
      if (record.request_hash !== hash) throw new IdempotencyKeyReusedError();
      ctx.status = record.response_status;
      ctx.type = "application/json";
      // (response_body: a row written before response_text existed.)
      ctx.body = record.response_text ?? JSON.stringify(record.response_body ?? null);
      ctx.set("Idempotent-Replayed", "true");
      return;
    }

    const { session } = outcome;
    let lost: Error | undefined;
    /**
     * Commits the response with the claim and the handler's change. When that fails the answer is not
     * sent: the change may not have been made, so the partner gets a 5xx and retries (a COMMIT lost in
     * flight that did commit is then replayed).
     */
    const keep = async (status: number, text: string) => {
      try {
        await session.query("UPDATE idempotency_keys SET response_status = $3, response_text = $4 WHERE partner_id = $1 AND key = $2", [partnerId, key, status, text]);
        await session.query("COMMIT");
      } catch (error) {
        lost = error as Error;
        ctx.state.log.warn({ err: error }, "idempotency record and its change not committed; a retry with this key will run again");
        throw error;
      }
    };
    try {
      try {
        await inUnitOfWork(pool, session, next);
      } catch (error) {
        const status = (error as { status?: number }).status ?? 500;
        if (status >= 500) await session.query("ROLLBACK").catch((rollback: Error) => (lost = rollback));
        else {
          const { code, message } = error as { code?: string; message?: string };
          // The body answerError() will send for it (http/errors.ts), serialised as Koa serialises it.
          await keep(status, JSON.stringify({ error: code, message }));
        }
        throw error;
      }
      const text = JSON.stringify(ctx.body ?? null);
      ctx.type = "application/json";
      ctx.body = text; // sent as kept: the bytes a replay sends
      await keep(ctx.status, text);
    } finally {
      // A session whose COMMIT or ROLLBACK failed is closed rather than returned with a transaction open.
      session.release(lost);
    }
  };
}

/** Removes the records past their retention (a periodic maintenance task). */
export async function pruneIdempotencyKeys(pool: Pool): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => ${RETENTION_HOURS})`);
  return rowCount ?? 0;
}
