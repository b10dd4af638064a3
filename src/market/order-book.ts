import { DEPOSIT_HELD, pricePerUnitColumn } from "../orders/queries.ts";
import { indexerTablesMissing, reputationSql } from "../sync/indexer-tables.ts";
import { prepared, type Queryable } from "../db/pool.ts";
import { toJsonNumber } from "../domain/money.ts";
import { findParticipantByClabePrefix } from "../domain/spei-participants.ts";
import { isoTimestampText, pageOf } from "../db/filters.ts";

// The order book (decisions 17), public: ACTIVE orders of every partner whose listing has not expired,
// cheapest for the buyer first, that is by what the buyer pays per token it receives (totalMxn over
// receiveAmount, the amount less the partner's fee): an order with a fee shows a lower pricePerUnit
// than the buyer really pays. It shows what a buyer needs to choose, never the CLABE, the partner or the
// user. Served by the partial index orders_book (migrations 1764300000100, 1764400000310): the scan walks
// the listed orders in that order and stops at the page; the total is never a count of every listing
// (see BOOK_TOTAL). The page is one statement: its amounts computed by PostgreSQL from the stored
// numerics, each seller's reputation looked up in the same statement (a second round trip was most of the
// page's time under load).

export interface OrderBookFilters {
  minAmount?: number;
  maxAmount?: number;
  bankCode?: string;
  limit: number;
  offset: number;
}

interface BookRow {
  escrow_order_id: string;
  token: string;
  amount_usdc: string;
  receive_amount: string;
  total_mxn: string;
  price_per_unit: string;
  bank_code: string;
  /** ISO text (isoTimestampText). */
  expires_at: string;
  seller_reputation: string;
}

/** Reputation scores of several accounts as the indexer read them from the chain (none: the contract's 0). */
export async function readReputations(db: Queryable, indexerSchema: string | undefined, accounts: string[]): Promise<Map<string, number>> {
  const scores = new Map<string, number>();
  const wanted = [...new Set(accounts.map((account) => account.toLowerCase()))];
  if (!indexerSchema || wanted.length === 0) return scores;
  try {
    const { rows } = await db.query<{ account: string; score: string }>(
      `SELECT a.account, r.score FROM unnest($1::text[]) AS a (account) CROSS JOIN LATERAL (${reputationSql(indexerSchema, "a.account")}) r`,
      [wanted],
    );
    for (const row of rows) scores.set(row.account, Number(row.score));
  } catch (error) {
    // The indexer has not created its tables yet: nothing is known on chain, which is the contract's 0.
    if (!indexerTablesMissing(error)) throw error;
  }
  return scores;
}

/**
 * The whole book's total without counting the listings: the ACTIVE orders counted in order_counts (kept in
 * every order change's transaction) less those ACTIVE orders that are not listed, a listing past its end
 * whose timer has not run yet or a held deposit, each read from its own small partial index (migration
 * 1764400000310). One statement, so one snapshot: exact as of its start, like the count it replaces. Its
 * time is the database's now(), not a parameter: with the time as one, PostgreSQL priced a generic plan
 * above the custom ones and planned the statement again at every call (pg_prepared_statements), which cost
 * more than running it; without parameters it is planned once per session (the book served 1,250 -> 2,030
 * pages a second from 8 concurrent callers).
 */
const BOOK_TOTAL = `SELECT (SELECT coalesce(sum(count), 0) FROM order_counts WHERE status = 'ACTIVE')
  - (SELECT count(*) FROM orders WHERE status = 'ACTIVE' AND (CASE WHEN status = 'ACTIVE' THEN expires_at END) <= now())
  - (SELECT count(*) FROM orders WHERE status = 'ACTIVE' AND ${DEPOSIT_HELD} AND expires_at > now()) AS n`;

export async function orderBook(db: Queryable, indexerSchema: string | undefined, filters: OrderBookFilters, now = new Date()) {
  // The page keeps the time as a parameter: with now() its limit and offset were its only parameters, and
  // those alone left it planned at every call (the opposite of BOOK_TOTAL).
  const conditions = ["status = 'ACTIVE'", "expires_at > $1", `NOT ${DEPOSIT_HELD}`];
  const values: unknown[] = [now];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    conditions.push(sql.replace("?", `$${values.length}`));
  };
  if (filters.minAmount !== undefined) add("amount_usdc >= ?", filters.minAmount);
  if (filters.maxAmount !== undefined) add("amount_usdc <= ?", filters.maxAmount);
  if (filters.bankCode !== undefined) add("bank_code = ?", filters.bankCode);
  const where = `WHERE ${conditions.join(" AND ")}`;
  const filtered = values.length > 1; // a filter besides the listing time: minAmount, maxAmount or bankCode
  // The page is read first and each seller's reputation looked up for its rows alone (one probe of the
  // indexer's reputation index a row): joined to the listings, the plan hung on the row estimates, and
  // with statistics that still saw few listings (10,000 orders listed since the last ANALYZE) PostgreSQL
  // hashed every listing against the reputations and sorted them, 70-440 ms a page instead of a walk of
  // orders_book stopping at the page (bench figure 3).
  const page = (schema: string | undefined) =>
    db.query<BookRow>(
      prepared(
        `SELECT p.*, ${schema ? "coalesce(r.score, 0)" : "0::numeric"} AS seller_reputation
           FROM (SELECT escrow_order_id, token, amount_usdc, receive_amount(amount_usdc, fee_bps) AS receive_amount, total_mxn, ${pricePerUnitColumn("orders")},
                        bank_code, ${isoTimestampText("expires_at")} AS expires_at, seller_wallet, (total_mxn / receive_amount(amount_usdc, fee_bps)) AS book_price, id
                   FROM orders ${where}
                  ORDER BY (total_mxn / receive_amount(amount_usdc, fee_bps)), id LIMIT $${values.length + 1} OFFSET $${values.length + 2}) p
           ${schema ? `LEFT JOIN LATERAL (${reputationSql(schema, "lower(p.seller_wallet)")}) r ON true` : ""}
          ORDER BY p.book_price, p.id`,
        [...values, filters.limit, filters.offset],
      ),
    );
  const [{ rows }, count] = await Promise.all([
    page(indexerSchema).catch((error: unknown) => {
      // The indexer has not created its tables yet: nothing is known on chain, which is the contract's 0.
      if (indexerTablesMissing(error)) return page(undefined);
      throw error;
    }),
    // A filtered total counts the matching listings in orders_book alone (its columns are included).
    filtered ? db.query<{ n: string }>(prepared(`SELECT count(*) AS n FROM orders ${where}`, values)) : db.query<{ n: string }>(prepared(BOOK_TOTAL, [])),
  ]);
  const total = Number(count.rows[0]!.n);
  return pageOf(
    "orders",
    rows.map((row) => ({
      escrowOrderId: row.escrow_order_id,
      token: row.token,
      amount: toJsonNumber(row.amount_usdc),
      receiveAmount: toJsonNumber(row.receive_amount),
      totalMxn: toJsonNumber(row.total_mxn),
      pricePerUnit: toJsonNumber(row.price_per_unit),
      bankName: findParticipantByClabePrefix(row.bank_code)?.name ?? row.bank_code,
      bankCode: row.bank_code,
      listingExpiresAt: row.expires_at,
      sellerReputation: Number(row.seller_reputation),
    })),
    total,
    filters,
  );
}

/**
 * The book as the public route reads it: a request for a page that is being read already shares that
 * read instead of sending the same two statements again. Every visitor asks for the same first page, and
 * under load most requests arrived while one was in flight (bench figure 3: 1,400 a second with a read
 * taking 1-5 ms). A request that joins sees the book as of a read begun at most one read's time before it
 * arrived, a few milliseconds, while the book itself follows the chain with the indexer's lag; a request
 * that comes after a read has settled always reads again, so nothing is cached. Entries live only while
 * their read is in flight, so distinct filters cannot grow memory.
 */
export function sharedOrderBookReads(db: Queryable, indexerSchema: string | undefined): (filters: OrderBookFilters) => ReturnType<typeof orderBook> {
  const inFlight = new Map<string, ReturnType<typeof orderBook>>();
  return (filters) => {
    const key = JSON.stringify([filters.minAmount, filters.maxAmount, filters.bankCode, filters.limit, filters.offset]);
    let read = inFlight.get(key);
    if (!read) {
      read = orderBook(db, indexerSchema, filters).finally(() => inFlight.delete(key));
      inFlight.set(key, read);
    }
    return read;
  };
}
