import type Koa from "koa";
import type { Logger } from "../../logger.ts";
import type { AppState } from "../context.ts";
import { answerError, assertAnswered } from "../errors.ts";
import { useLinearQuery } from "./linear-query.ts";
import type { HttpMetrics } from "./metrics.ts";
import { beginRequest, logRequest } from "./request-context.ts";

/**
 * What every request goes through around its route, in one middleware: its id and logger, the one-pass
 * query parse, the mapping of errors to the spec's responses, then its metrics and access line. One
 * async frame and one clock reading instead of four layers, each with its own (docs/benchmarks.md, figure 1).
 */
export function requestLifecycle(deps: { logger: Logger; metrics: HttpMetrics }): Koa.Middleware<AppState> {
  const { logger, metrics } = deps;
  return async (ctx, next) => {
    const started = performance.now();
    beginRequest(ctx, logger);
    useLinearQuery(ctx);
    try {
      await next();
      assertAnswered(ctx);
    } catch (caught) {
      answerError(ctx, caught);
    } finally {
      const seconds = (performance.now() - started) / 1000;
      metrics.record(ctx, seconds);
      logRequest(ctx, logger, seconds);
    }
  };
}
