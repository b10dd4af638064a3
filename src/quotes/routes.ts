import type { Pool } from "../db/pool.ts";
import { RateUnavailableError, UserSanctionedError, ValidationError } from "../domain/errors.ts";
import { money } from "../domain/money.ts";
import { FEE_RECIPIENTS, type FeeRecipient } from "../domain/pricing.ts";
import { createQuote, quoteView } from "./quotes.ts";
import type { ExchangeRates } from "../rates/exchange-rates.ts";
import { getUserByRef } from "../users/users.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { isoTimestamp } from "../http/schema.ts";

export const MAX_AMOUNT_USDC = 1_000_000;

interface QuoteRequest {
  type: "SELL";
  amountUsdc: number;
  partnerUserRef: string;
  feePercent?: number;
  feeRecipient?: FeeRecipient;
}

export function quoteRoutes(api: RouteGroup, deps: { pool: Pool; rates: ExchangeRates; quoteTtlSeconds: number }): void {
  const { pool, rates } = deps;
  api.add<QuoteRequest>(
    {
      method: "post",
      path: "/quotes",
      tag: "Quotes",
      summary: "Lock the current rate for an amount of USDC",
      description:
        "gross = amountUsdc x exchangeRate, fee = gross x feePercent / 100, net = gross - fee, each rounded half-up to cents. " +
        "The quote is bound to the user, single-use, and expires after 5 minutes.",
      idempotent: true,
      body: {
        type: "object",
        additionalProperties: false,
        required: ["type", "amountUsdc", "partnerUserRef"],
        properties: {
          type: { const: "SELL" },
          amountUsdc: { type: "number", exclusiveMinimum: 0, maximum: MAX_AMOUNT_USDC, "x-maxDecimals": 6 },
          partnerUserRef: { type: "string", minLength: 1, maxLength: 255 },
          feePercent: { type: "number", minimum: 0, maximum: 10, "x-maxDecimals": 2 },
          feeRecipient: { enum: FEE_RECIPIENTS },
        },
      },
      responses: {
        201: {
          description: "Quote",
          schema: {
            type: "object",
            properties: {
              id: { type: "string" },
              type: { const: "SELL" },
              amountUsdc: { type: "number" },
              exchangeRate: { type: "number" },
              grossAmountMxn: { type: "number" },
              feePercent: { type: "number" },
              feeAmountMxn: { type: "number" },
              feeRecipient: { enum: FEE_RECIPIENTS },
              netAmountMxn: { type: "number" },
              expiresAt: isoTimestamp,
            },
          },
        },
      },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "USER_SANCTIONED", "RATE_UNAVAILABLE"],
    },
    async (ctx, { body }) => {
      const partner = currentPartner(ctx);
      const feePercent = money(body.feePercent ?? 0);
      const feeRecipient = body.feeRecipient ?? "NONE";
      if (feePercent.gt(0) && feeRecipient === "NONE") {
        throw new ValidationError('"feeRecipient" must be USER or PARTNER when "feePercent" is above 0');
      }
      // An unknown or a sanctioned user is told before an unavailable rate; the quote's insert finds the
      // user itself, so the user is read on its own only to say why there is no quote.
      const refuseUser = async () => {
        const user = await getUserByRef(pool, partner.id, body.partnerUserRef);
        if (user.isSanctioned) throw new UserSanctionedError();
      };
      const current = () =>
        rates.current().catch(async (error: unknown) => {
          await refuseUser();
          throw error;
        });
      const input = {
        partnerId: partner.id,
        partnerUserRef: body.partnerUserRef,
        amountUsdc: money(body.amountUsdc).toFixed(),
        feePercent: feePercent.toFixed(),
        feeRecipient,
        ttlSeconds: deps.quoteTtlSeconds,
      };
      // The rate this process read last while it is valid, else the latest one read or fetched; the insert
      // refuses a rate that is no longer the latest, and the quote is then priced again on the one read now.
      let made = await createQuote(pool, { ...input, rate: rates.recent() ?? (await current()) });
      if ("refused" in made && made.refused === "rate") made = await createQuote(pool, { ...input, rate: await current() });
      if ("refused" in made && made.refused === "user") {
        await refuseUser();
        // The user was created or cleared of sanctions since the insert: the quote is made for it now.
        made = await createQuote(pool, { ...input, rate: await current() });
      }
      if ("refused" in made) throw made.refused === "user" ? new UserSanctionedError() : new RateUnavailableError("The exchange rate changed while the quote was made; ask again");
      const quote = made.quote;
      ctx.status = 201;
      ctx.body = quoteView(quote);
    },
  );
}
