import { prepared, type Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import { toJsonNumber } from "../domain/money.ts";
import { priceQuote, type FeeRecipient } from "../domain/pricing.ts";
import type { ExchangeRate } from "../rates/exchange-rates.ts";

export interface Quote {
  id: string;
  partnerId: string;
  userId: string;
  amountUsdc: string;
  exchangeRate: string;
  rateSource: string;
  grossAmountMxn: string;
  feePercent: string;
  feeAmountMxn: string;
  feeRecipient: FeeRecipient;
  netAmountMxn: string;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: Date;
}

interface QuoteRow {
  id: string;
  partner_id: string;
  user_id: string;
  amount_usdc: string;
  exchange_rate: string;
  rate_source: string;
  gross_mxn: string;
  fee_percent: string;
  fee_mxn: string;
  fee_recipient: FeeRecipient;
  net_mxn: string;
  expires_at: Date;
  used_at: Date | null;
  created_at: Date;
}

function fromRow(row: QuoteRow): Quote {
  return {
    id: row.id,
    partnerId: row.partner_id,
    userId: row.user_id,
    amountUsdc: row.amount_usdc,
    exchangeRate: row.exchange_rate,
    rateSource: row.rate_source,
    grossAmountMxn: row.gross_mxn,
    feePercent: row.fee_percent,
    feeAmountMxn: row.fee_mxn,
    feeRecipient: row.fee_recipient,
    netAmountMxn: row.net_mxn,
    expiresAt: row.expires_at,
    usedAt: row.used_at,
    createdAt: row.created_at,
  };
}

export interface NewQuote {
  partnerId: string;
  userId: string;
  amountUsdc: string;
  feePercent: string;
  feeRecipient: FeeRecipient;
  rate: ExchangeRate;
  ttlSeconds: number;
}

/** Locks the rate for `ttlSeconds`: the quote's amounts are computed once, exactly, and stored. */
export async function createQuote(db: Queryable, input: NewQuote): Promise<Quote> {
  const amounts = priceQuote(input.amountUsdc, input.rate.usdMxn, input.feePercent);
  const { rows } = await db.query<QuoteRow>(
    `INSERT INTO quotes (id, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + make_interval(secs => $12)) RETURNING *`,
    [
      newId("qt"),
      input.partnerId,
      input.userId,
      input.amountUsdc,
      input.rate.usdMxn,
      input.rate.source,
      amounts.grossAmountMxn.toFixed(2),
      input.feePercent,
      amounts.feeAmountMxn.toFixed(2),
      input.feeRecipient,
      amounts.netAmountMxn.toFixed(2),
      input.ttlSeconds,
    ],
  );
  return fromRow(rows[0]!);
}

/** A partner's quote; another partner's quote is indistinguishable from a missing one. */
export async function findQuote(db: Queryable, partnerId: string, quoteId: string, forUpdate = false): Promise<Quote | undefined> {
  const { rows } = await db.query<QuoteRow>(
    `SELECT * FROM quotes WHERE id = $1 AND partner_id = $2${forUpdate ? " FOR UPDATE" : ""}`,
    [quoteId, partnerId],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** Marks the quote used; false when another order consumed it first. */
export async function consumeQuote(db: Queryable, quoteId: string): Promise<boolean> {
  const { rowCount } = await db.query(prepared("UPDATE quotes SET used_at = now() WHERE id = $1 AND used_at IS NULL", [quoteId]));
  return rowCount === 1;
}

/** `POST /quotes` response (spec: Quote). */
export function quoteView(quote: Quote) {
  return {
    id: quote.id,
    type: "SELL" as const,
    amountUsdc: toJsonNumber(quote.amountUsdc),
    exchangeRate: toJsonNumber(quote.exchangeRate),
    grossAmountMxn: toJsonNumber(quote.grossAmountMxn),
    feePercent: toJsonNumber(quote.feePercent),
    feeAmountMxn: toJsonNumber(quote.feeAmountMxn),
    feeRecipient: quote.feeRecipient,
    netAmountMxn: toJsonNumber(quote.netAmountMxn),
    expiresAt: quote.expiresAt.toISOString(),
  };
}
