import { randomUUID } from "node:crypto";
import type Koa from "koa";
import type { Logger } from "../../logger.ts";
import type { AppState } from "../context.ts";

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an id (`X-Request-Id`, echoed when the caller sent a sane one) and a child logger. */
export function requestContext(logger: Logger): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const incoming = ctx.get("X-Request-Id");
    const requestId = INCOMING_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set("X-Request-Id", requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.log.info(
        { method: ctx.method, path: ctx.state.logPath ?? ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10, partnerId: ctx.state.partner?.id },
        "request",
      );
    }
  };
}
