import { prepared, type Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import { toJsonNumber } from "../domain/money.ts";
import { mexicoPeriodStart } from "../domain/periods.ts";
import { priceQuote, type FeeRecipient } from "../domain/pricing.ts";
import type { ExchangeRate } from "../rates/exchange-rates.ts";
import { orderHistoryColumns, orderHistoryFromRow, type KycStatus, type KycTier, type OrderHistoryRow, type UserOrderHistory } from "../users/users.ts";

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

// A quote's columns, named rather than `*` in the statements below: a session's prepared statement fails
// once a migration adds a column (db/pool.ts).
const QUOTE_COLUMNS = ["id", "partner_id", "user_id", "amount_usdc", "exchange_rate", "rate_source", "gross_mxn", "fee_percent", "fee_mxn", "fee_recipient", "net_mxn", "expires_at", "used_at", "created_at"] as const satisfies readonly (keyof QuoteRow)[];

// The quote is made only while its rate is the latest row of `exchange_rates` as the service reads it
// (its id, value, source and fetch time to the millisecond): a rate kept in memory (ExchangeRates.recent)
// that another instance replaced, or an operator deleted or aged, is refused here, and one statement
// answers both the quote and whether the rate was current.
const INSERT_QUOTE = `WITH rate AS (
       SELECT id = $13 AND usd_mxn = $5 AND source = $6 AND date_trunc('milliseconds', fetched_at) = $14 AS current
         FROM exchange_rates ORDER BY fetched_at DESC, id DESC LIMIT 1),
     inserted AS (
       INSERT INTO quotes (id, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at)
       SELECT $1, $2, u.id, $4, $5, $6, $7, $8, $9, $10, $11, now() + make_interval(secs => $12)
         FROM users u, rate WHERE u.partner_id = $2 AND u.partner_user_ref = $3 AND NOT u.is_sanctioned AND rate.current
         RETURNING ${QUOTE_COLUMNS.join(", ")})
     SELECT inserted.*, coalesce((SELECT current FROM rate), false) AS rate_current FROM (VALUES (true)) AS answer LEFT JOIN inserted ON true`;

// The user's order history is read in the same statement, from the statement's snapshot, which was taken
// before the lock was granted: an order of this user committed while this statement waited for the user's
// lock is not in it. Every order's insert also updates its user's row (create-order.ts, the risk level), so
// that order left a newer version of the row than the snapshot's: the locked row's ctid then differs from
// the one the snapshot reads, and `history_current` is false.
const LOCK_QUOTE_WITH_USER = `WITH locked AS (
       SELECT ${QUOTE_COLUMNS.map((column) => `q.${column}`).join(", ")},
              u.partner_user_ref AS user_ref, u.kyc_status AS user_kyc_status, u.kyc_tier AS user_kyc_tier, u.is_pep AS user_is_pep,
              u.is_sanctioned AS user_is_sanctioned, u.created_at AS user_created_at, u.ctid AS user_version
         FROM quotes q JOIN users u ON u.id = q.user_id WHERE q.id = $1 AND q.partner_id = $2 FOR NO KEY UPDATE OF q, u)
     SELECT locked.*, history.*, locked.user_version = (SELECT ctid FROM users WHERE id = locked.user_id) AS history_current
       FROM locked, LATERAL (SELECT ${orderHistoryColumns("$3")} FROM orders WHERE user_id = locked.user_id) history`;

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
  /** The partner's user the quote is for. */
  partnerUserRef: string;
  amountUsdc: string;
  feePercent: string;
  feeRecipient: FeeRecipient;
  rate: ExchangeRate;
  ttlSeconds: number;
}

/**
 * Locks the rate for `ttlSeconds`: the quote's amounts are computed once, exactly, and stored. The user is
 * found in the same statement. Nothing is written when the partner has no such user or the user is
 * sanctioned (refused "user"; the caller tells which), or when `input.rate` is no longer the latest rate
 * (refused "rate").
 */
export async function createQuote(db: Queryable, input: NewQuote): Promise<{ quote: Quote } | { refused: "user" | "rate" }> {
  const amounts = priceQuote(input.amountUsdc, input.rate.usdMxn, input.feePercent);
  // One row always: the quote's columns are null when nothing was inserted.
  const { rows } = await db.query<(QuoteRow | Record<keyof QuoteRow, null>) & { rate_current: boolean }>(
    prepared(INSERT_QUOTE, [
      newId("qt"),
      input.partnerId,
      input.partnerUserRef,
      input.amountUsdc,
      input.rate.usdMxn,
      input.rate.source,
      amounts.grossAmountMxn.toFixed(2),
      input.feePercent,
      amounts.feeAmountMxn.toFixed(2),
      input.feeRecipient,
      amounts.netAmountMxn.toFixed(2),
      input.ttlSeconds,
      input.rate.id,
      input.rate.fetchedAt,
    ]),
  );
  const row = rows[0]!;
  if (row.id !== null) return { quote: fromRow(row as QuoteRow) };
  return { refused: row.rate_current ? "user" : "rate" };
}

/** The user a quote was made for, as an order's checks read it (decisions 6). */
export interface QuoteUser {
  id: string;
  partnerUserRef: string;
  kycStatus: KycStatus;
  kycTier: KycTier;
  isPep: boolean;
  isSanctioned: boolean;
  createdAt: Date;
}

/**
 * A partner's quote and its user, both rows locked (quote first), and the user's order history, in one
 * round trip: the quote is then consumed by exactly one order, and the user's orders are created one at a
 * time. The history is undefined when an order of the user was committed after the statement began (it
 * waited for the user's lock): the caller reads it again, now that the lock is held. Undefined altogether
 * when this partner has no such quote: another partner's quote is indistinguishable from a missing one.
 * NO KEY UPDATE, not UPDATE: as exclusive among the order's writers, but it lets through the key-share
 * locks of foreign key checks, so a new quote of the same user (quotes.user_id) does not wait for this
 * order's commit. Keys are never changed, so nothing needs them held.
 */
export async function lockQuoteWithUser(
  db: Queryable,
  partnerId: string,
  quoteId: string,
  now = new Date(),
): Promise<{ quote: Quote; user: QuoteUser; history: UserOrderHistory | undefined } | undefined> {
  const { rows } = await db.query<
    QuoteRow &
      OrderHistoryRow & { user_ref: string; user_kyc_status: KycStatus; user_kyc_tier: KycTier; user_is_pep: boolean; user_is_sanctioned: boolean; user_created_at: Date; history_current: boolean }
  >(prepared(LOCK_QUOTE_WITH_USER, [quoteId, partnerId, mexicoPeriodStart("month", now)]));
  const row = rows[0];
  if (!row) return undefined;
  return {
    quote: fromRow(row),
    user: {
      id: row.user_id,
      partnerUserRef: row.user_ref,
      kycStatus: row.user_kyc_status,
      kycTier: row.user_kyc_tier,
      isPep: row.user_is_pep,
      isSanctioned: row.user_is_sanctioned,
      createdAt: row.user_created_at,
    },
    history: row.history_current ? orderHistoryFromRow(row) : undefined,
  };
}

/**
 * A statement that marks the quote whose id is the parameter `idParam` used, `RETURNING id`: no row when
 * another order consumed it first. A fragment, so an order's insert can depend on it in one statement.
 */
export const consumeQuoteStatement = (idParam: string) => `UPDATE quotes SET used_at = now() WHERE id = ${idParam} AND used_at IS NULL RETURNING id`;

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
