import { randomUUID } from "node:crypto";
import type Koa from "koa";
import type { Logger } from "../../logger.ts";
import type { AppState } from "../context.ts";
import type { PartnerWithSecrets } from "../../partners/partners.ts";

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A request's state. Its child logger is made on first use: a child runs the redacting formatters over
 * its bindings when made, and most requests log nothing (or log at a level that is off).
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
}

/** Gives every request an id (`X-Request-Id`, echoed when the caller sent a sane one) and a child logger. */
export function requestContext(logger: Logger): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const incoming = ctx.get("X-Request-Id");
    const requestId = INCOMING_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
    ctx.state = new RequestState(logger, requestId);
    ctx.set("X-Request-Id", requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled("info")) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        ctx.state.log.info(
          { method: ctx.method, path: ctx.state.logPath ?? ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10, partnerId: ctx.state.partner?.id },
          "request",
        );
      }
    }
  };
}
