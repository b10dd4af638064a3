import { toJsonNumber } from "../domain/money.ts";
import type { ExchangeRates } from "./exchange-rates.ts";
import type { RouteGroup } from "../http/routes.ts";
import { isoTimestamp } from "../http/schema.ts";

export function exchangeRateRoutes(api: RouteGroup, deps: { rates: ExchangeRates; validitySeconds: number }): void {
  api.add(
    {
      method: "get",
      path: "/exchange-rate",
      tag: "Quotes",
      summary: "The current mid-market USD/MXN rate",
      description: "The central bank's FIX rate, or the fallback provider's when the central bank has none. Cache it for `validFor` seconds.",
      responses: {
        200: {
          description: "Rate",
          schema: {
            type: "object",
            properties: {
              usdMxn: { type: "number" },
              source: { enum: ["central_bank", "fallback_provider"] },
              timestamp: isoTimestamp,
              validFor: { type: "integer" },
            },
          },
        },
      },
      errors: ["RATE_UNAVAILABLE"],
    },
    async (ctx) => {
      const rate = await deps.rates.current();
      ctx.body = {
        usdMxn: toJsonNumber(rate.usdMxn),
        source: rate.source,
        timestamp: rate.fetchedAt.toISOString(),
        validFor: deps.validitySeconds,
      };
    },
  );
}
