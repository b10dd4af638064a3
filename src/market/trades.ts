import type { Queryable } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import { toJsonNumber } from "../domain/money.ts";
import { findParticipantByClabePrefix, findParticipantByCode } from "../domain/spei-participants.ts";
import { ORDER_STATUSES, type OrderStatus } from "../orders/machine.ts";
import { ORDER_TIMELINE, timelineOf, type OrderRow, type TimelineColumns, type TimelineEntry } from "../orders/queries.ts";
import { pageOf } from "../db/filters.ts";

// A buyer's trades (decisions 17): the orders its wallet locked, with where and how much to pay once
// locked, its payment report and the order's timeline. Another wallet's trade is indistinguishable from
// a missing one.

export const TRADE_STATUSES = ORDER_STATUSES;

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The order `escrowOrderId` if `wallet` locked it, with its timeline if asked (in the same statement); NOT_FOUND otherwise. */
async function selectTrade<Row extends OrderRow>(db: Queryable, wallet: string, escrowOrderId: string, withTimeline: boolean): Promise<Row> {
  if (!/^0x[0-9a-fA-F]{64}$/.test(escrowOrderId)) throw new NotFoundError(`No trade ${escrowOrderId}`);
  const { columns, join } = withTimeline ? { columns: `, ${ORDER_TIMELINE.columns}`, join: ORDER_TIMELINE.join } : { columns: "", join: "" };
  const { rows } = await db.query<Row>(`SELECT o.*${columns} FROM orders o ${join} WHERE o.escrow_order_id = $1 AND lower(o.buyer_wallet) = $2`, [
    escrowOrderId.toLowerCase(),
    wallet.toLowerCase(),
  ]);
  if (!rows[0]) throw new NotFoundError(`No trade ${escrowOrderId} for this wallet`);
  return rows[0];
}

/** The order `escrowOrderId` if `wallet` locked it; NOT_FOUND otherwise. */
export const getTradeRow = (db: Queryable, wallet: string, escrowOrderId: string): Promise<OrderRow> => selectTrade(db, wallet, escrowOrderId, false);

export type Verification = "PENDING" | "VERIFIED" | "REJECTED" | "HELD";

/** What the buyer is told of a third-party payment (decisions 8): why, and what happens next. */
export const THIRD_PARTY_HOLD_REASON =
  "The payment came from an account that is not in your verified name (a third-party payment). It is held for an operator's review: " +
  "the USDC is released if the account turns out to be yours, otherwise the seller returns the pesos to the account that sent them.";

/** The buyer's latest payment report, from the timeline, and what became of it. */
export function latestPaymentReport(timeline: TimelineEntry[]) {
  const reports = timeline.filter((entry) => entry.event === "PAYMENT_REPORTED");
  const report = reports[reports.length - 1];
  if (!report) return null;
  const key = String(report.data.cepTrackingKey);
  const after = timeline.slice(timeline.indexOf(report) + 1);
  const about = (event: string) => after.some((entry) => entry.event === event && String(entry.data.cepTrackingKey).toUpperCase() === key.toUpperCase());
  // A held payment released by the operator gets its PAYMENT_VERIFIED entry after the hold's: VERIFIED then.
  const held = about("THIRD_PARTY_PAYMENT") && !after.some((entry) => entry.event === "PAYMENT_VERIFIED");
  const verification: Verification = held ? "HELD" : about("PAYMENT_VERIFIED") ? "VERIFIED" : about("PAYMENT_REJECTED") ? "REJECTED" : "PENDING";
  const bankCode = String(report.data.senderBankCode);
  return {
    trackingKey: key,
    operationDate: String(report.data.operationDate),
    senderBankCode: bankCode,
    senderBankName: findParticipantByCode(bankCode)?.name ?? bankCode,
    amountMxn: toJsonNumber(String(report.data.amountMxn)),
    verification,
    ...(held ? { holdReason: THIRD_PARTY_HOLD_REASON } : {}),
  };
}

/** `GET /market/v1/trades` item. */
export function tradeListItem(row: OrderRow) {
  return {
    escrowOrderId: row.escrow_order_id,
    status: row.status,
    token: row.token,
    amount: toJsonNumber(row.amount_usdc),
    totalMxn: toJsonNumber(row.total_mxn),
    lockedAt: iso(row.locked_at),
    lockExpiresAt: iso(row.lock_expires_at),
    completedAt: iso(row.completed_at),
  };
}

/**
 * What the buyer may see of the order's timeline: its own trade from the lock on, each event with only
 * the listed fields. Everything else stays with the seller's partner and the operators: the seller's
 * side (creation, deposit, listing, cancellation, late deposits), and above all the sanctions screening
 * (SANCTIONS_HOLD with the list entry, PAYMENT_VERIFIED_HELD, LOCK_EXPIRY_REFUND_HELD, HOLD_DECIDED with
 * the operator's note, a held release's `releasedAfterHold`), which must not tip off a listed buyer, and
 * an operator's pending dispute resolution with its note. An event not listed here is not shown, so a new
 * event stays hidden until it is decided to be the buyer's.
 */
const BUYER_TIMELINE: ReadonlyMap<string, readonly string[]> = new Map(Object.entries({
  LOCKED: ["txHash", "lockExpiresAt"],
  PAYMENT_REPORTED: ["cepTrackingKey", "operationDate", "senderBankCode", "amountMxn"],
  PAYMENT_VERIFIED: ["cepTrackingKey", "amountMxn", "paidAt"],
  PAYMENT_REJECTED: ["cepTrackingKey", "operationDate", "senderBankCode", "reason", "message"],
  // The buyer's own payment came from another account: told so (it is the buyer's to explain), never who paid.
  THIRD_PARTY_PAYMENT: ["cepTrackingKey", "reason"],
  LOCK_EXPIRY_MOVED: ["lockExpiresAt", "reason"],
  LOCK_EXPIRY_REFUND_DEFERRED: ["reason", "graceEndsAt"],
  LOCK_EXPIRY_REFUND_REQUESTED: [],
  LOCK_EXPIRED: ["refundTxHash"],
  DISPUTED: ["openedBy", "txHash"],
  DISPUTE_RESOLVED: ["outcome", "txHash", "lockExpiresAt"],
  COMPLETED: ["releaseTxHash"],
  REFUNDED: ["reason", "refundTxHash"],
}));

export function buyerTimeline(timeline: TimelineEntry[]): TimelineEntry[] {
  return timeline.flatMap((entry) => {
    const fields = BUYER_TIMELINE.get(entry.event);
    if (!fields) return [];
    const data = Object.fromEntries(fields.filter((field) => entry.data[field] !== undefined).map((field) => [field, entry.data[field]]));
    return [{ ...entry, data }];
  });
}

/** `GET /market/v1/trades/:escrowOrderId`: where and how much to pay, the report, the buyer's part of the timeline. */
export async function tradeDetail(db: Queryable, wallet: string, escrowOrderId: string) {
  const row = await selectTrade<OrderRow & TimelineColumns>(db, wallet, escrowOrderId, true);
  const timeline = timelineOf(row);
  return {
    ...tradeListItem(row),
    payment: {
      clabe: row.seller_clabe,
      bankName: findParticipantByClabePrefix(row.bank_code)?.name ?? row.bank_code,
      bankCode: row.bank_code,
      amountMxn: toJsonNumber(row.total_mxn),
      concept: row.payment_concept,
    },
    paymentReport: latestPaymentReport(timeline),
    releaseTxHash: row.release_tx_hash,
    timeline: buyerTimeline(timeline),
  };
}

export async function listTrades(db: Queryable, wallet: string, filters: { status?: OrderStatus; limit: number; offset: number }) {
  const values: unknown[] = [wallet.toLowerCase()];
  let where = "WHERE lower(buyer_wallet) = $1";
  if (filters.status) {
    values.push(filters.status);
    where += " AND status = $2";
  }
  const [{ rows }, count] = await Promise.all([
    // Newest lock first. locked_at is the lock's block timestamp (seconds), so locks in one second are
    // told apart by the chain's own order: the indexer applies Locked logs by (block number, log index),
    // so the LOCKED timeline entry's sequence follows it (decisions 17).
    db.query<OrderRow>(
      `SELECT * FROM orders ${where}
        ORDER BY lower(buyer_wallet), locked_at DESC NULLS LAST,
                 (SELECT max(t.seq) FROM order_timeline t WHERE t.order_id = orders.id AND t.event = 'LOCKED') DESC NULLS LAST, id DESC
        LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [
        ...values,
        filters.limit,
        filters.offset,
      ],
    ),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM orders ${where}`, values),
  ]);
  const total = Number(count.rows[0]!.n);
  return pageOf("trades", rows.map(tradeListItem), total, filters);
}
