import type Koa from "koa";
import { isChainUnreachable } from "../chain/rpc-transport.ts";
import { databaseUnavailable } from "../db/pool.ts";
import { ChainUnavailableError, InternalError, NotFoundError, OfframpError, ServiceUnavailableError, ValidationError } from "../domain/errors.ts";
import type { AppState } from "./context.ts";

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

/** Body-parser and HTTP errors raised by Koa's own stack, as the spec's VALIDATION_ERROR. */
function fromHttpError(error: HttpLikeError): OfframpError | undefined {
  const status = error.status ?? error.statusCode;
  if (status === undefined || status >= 500) return undefined;
  if (error.type === "entity.too.large" || status === 413) return new ValidationError("The request body is larger than 64 KiB");
  if (error.type === "entity.parse.failed" || (status === 400 && error instanceof SyntaxError)) return new ValidationError("The request body is not valid JSON");
  if (error.type === "encoding.unsupported" || status === 415) return new ValidationError("Unsupported request encoding");
  if (status === 404) return new NotFoundError();
  if (status === 400) return new ValidationError(error.expose && error.message ? error.message : "The request is invalid");
  return undefined;
}

/**
 * A request no route answered (a 404 without a body), or a router's allowedMethods() answer to a known path
 * with another method (a bare 405, or 501 for an unknown method): for the API a route that does not exist,
 * thrown as the spec's NOT_FOUND. Runs after the whole chain.
 */
export function assertAnswered(ctx: Koa.ParameterizedContext<AppState>): void {
  if (ctx.status === 404 && ctx.body === undefined) throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
  if ((ctx.status === 405 || ctx.status === 501) && (ctx.body === undefined || ctx.body === null || typeof ctx.body === "string")) {
    ctx.remove("Allow");
    throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
  }
}

/**
 * The one place where errors become responses: `{ error, message }` with the code's status. A database
 * out of reach (no session within the pool's wait, a connection refused or cut) is 503
 * SERVICE_UNAVAILABLE with Retry-After. Anything else unexpected is logged with its stack and answered
 * 500 INTERNAL_ERROR, with nothing internal in the body.
 */
export function answerError(ctx: Koa.ParameterizedContext<AppState>, caught: unknown): void {
  let error: OfframpError;
  if (caught instanceof OfframpError) error = caught;
  else if (databaseUnavailable(caught)) error = new ServiceUnavailableError("The database is not reachable right now; retry later");
  // The chain out of reach after every endpoint and retry: a retry later can succeed (503, not 500).
  else if (isChainUnreachable(caught)) error = new ChainUnavailableError();
  else error = fromHttpError(caught as HttpLikeError) ?? new InternalError();
  if (error.status >= 500) ctx.state.log.error({ err: caught }, "request failed");
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.body = { error: error.code, message: error.message };
}
