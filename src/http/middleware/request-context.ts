import { randomUUID } from "node:crypto";
import type { Logger } from "../../logger.ts";
import type { AppContext, AppState } from "../context.ts";
import type { PartnerWithSecrets } from "../../partners/partners.ts";

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A request's state. Its child logger is made on first use: a child runs the redacting formatters over
 * its bindings when made, and most requests log nothing but their access line.
 */
class RequestState implements AppState {
  partner?: PartnerWithSecrets;
  logPath?: string;
  readonly requestId: string;
  readonly #logger: Logger;
  #log: Logger | undefined;

  constructor(logger: Logger, requestId: string) {
    this.#logger = logger;
    this.requestId = requestId;
  }

  get log(): Logger {
    return (this.#log ??= this.#logger.child({ requestId: this.requestId }));
  }

  /** Writes the request's access line: through its child if one was made, else through the root logger with the id in the line. */
  logAccess(fields: Record<string, unknown>): void {
    if (this.#log) this.#log.info(fields, "request");
    else this.#logger.info({ requestId: this.requestId, ...fields }, "request");
  }
}

/** Gives the request an id (`X-Request-Id`, echoed when the caller sent a sane one) and a child logger made on first use. */
export function beginRequest(ctx: AppContext, logger: Logger): void {
  const incoming = ctx.get("X-Request-Id");
  const requestId = INCOMING_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
  ctx.state = new RequestState(logger, requestId);
  ctx.set("X-Request-Id", requestId);
}

/** The request's access line, at info: method, path as logged, status, duration, partner. */
export function logRequest(ctx: AppContext, logger: Logger, seconds: number): void {
  if (!logger.isLevelEnabled("info")) return;
  (ctx.state as AppState & RequestState).logAccess({
    method: ctx.method,
    path: ctx.state.logPath ?? ctx.path,
    status: ctx.status,
    ms: Math.round(seconds * 10_000) / 10,
    partnerId: ctx.state.partner?.id,
  });
}
