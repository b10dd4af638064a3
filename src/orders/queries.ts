import { isoTimestampText, MAX_PAGE_LIMIT, readPageWithTotal, whereEqual, type Statement } from "../db/filters.ts";
import { prepared, type Queryable } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import { money, toCents, toJsonNumber } from "../domain/money.ts";
import { findParticipantByClabePrefix } from "../domain/spei-participants.ts";
import type { OrderStatus } from "./machine.ts";
import { signedTermsOf, type SignedTerms } from "./terms.ts";

interface OrderRow {
  id: string;
  partner_id: string;
  escrow_order_id: string;
  status: OrderStatus;
  token: string;
  amount_usdc: string;
  amount_raw: string;
  total_mxn: string;
  exchange_rate: string;
  fee_bps: number;
  fee_recipient_address: string;
  treasury_share_bps: number;
  seller_clabe: string;
  bank_code: string;
  deposit_deadline: Date;
  deposit_signature: string;
  deposit_terms: SignedTerms | null;
  aml_risk_score: number;
  aml_risk_level: "LOW" | "MEDIUM" | "HIGH";
  expires_at: Date;
  escrow_tx_hash: string | null;
  seller_wallet: string | null;
  buyer_wallet: string | null;
  locked_at: Date | null;
  lock_expires_at: Date | null;
  cep_tracking_key: string | null;
  /** What the buyer writes in the SPEI concept (OFR + 7 digits, decisions 17); the CEP check requires it. */
  payment_concept: string;
  cep_validated_at: Date | null;
  release_tx_hash: string | null;
  refund_tx_hash: string | null;
  completed_at: Date | null;
  dispute_opened_by: string | null;
  dispute_outcome: string | null;
  machine_snapshot: unknown;
  version: number;
  created_at: Date;
  fee_percent: string;
  fee_recipient: string;
  /** Not a column of orders: the user's, selected with the order. */
  partner_user_ref: string;
  /** Not a column: pricePerUnitColumn, selected with the order. */
  price_per_unit: string;
}

/**
 * The columns of an order read by getOrderRow, named rather than `o.*` so that its statement is prepared
 * (src/db/pool.ts); every field of OrderRow but the two selected from elsewhere (checked below).
 */
const ORDER_COLUMNS = [
  "id", "partner_id", "escrow_order_id", "status", "token", "amount_usdc", "amount_raw", "total_mxn", "exchange_rate", "fee_bps",
  "fee_recipient_address", "treasury_share_bps", "seller_clabe", "bank_code", "deposit_deadline", "deposit_signature", "deposit_terms",
  "aml_risk_score", "aml_risk_level", "expires_at", "escrow_tx_hash", "seller_wallet", "buyer_wallet", "locked_at", "lock_expires_at",
  "cep_tracking_key", "payment_concept", "cep_validated_at", "release_tx_hash", "refund_tx_hash", "completed_at", "dispute_opened_by",
  "dispute_outcome", "machine_snapshot", "version", "created_at", "fee_percent", "fee_recipient",
] as const satisfies readonly (keyof OrderRow)[];
type UnreadField = Exclude<keyof OrderRow, (typeof ORDER_COLUMNS)[number] | "partner_user_ref" | "price_per_unit">;
// Fails to compile while a field of OrderRow is missing from ORDER_COLUMNS.
const everyFieldRead: [UnreadField] extends [never] ? true : UnreadField = true;
void everyFieldRead;

/**
 * SQL condition (on `orders` unaliased) of an ACTIVE order whose deposit came from a listed wallet and is
 * held for review (decisions 19): not in the book, no lock permit, until an operator's RELEASE lists it.
 */
export const DEPOSIT_HELD = "(machine_snapshot #>> '{context,depositHold,sellerWallet}' IS NOT NULL AND machine_snapshot #>> '{context,depositHold,decision}' IS DISTINCT FROM 'RELEASE')";

/**
 * SQL of the seller's asking price in MXN per token unit, `price_per_unit` (decisions section 6: totalMxn
 * over the amount, 4 decimals, half up), computed by PostgreSQL from the stored numerics rather than per
 * row in decimal.js. Exact: half up is floor(total / amount * 10^4 + 1/2), an integer division (`div`
 * truncates; both amounts are positive), so the quotient is never rounded twice.
 */
export const pricePerUnitColumn = (table: string) =>
  `div(${table}.total_mxn * 20000 + ${table}.amount_usdc, ${table}.amount_usdc * 2) * 0.0001 AS price_per_unit`;

/**
 * The RETURNING list of an INSERT INTO orders that gives back an `OrderRow` (the new order's answer, read
 * from its own insert): the user's reference is the parameter `partnerUserRef` names.
 */
export const orderReturning = (partnerUserRef: string) => `${ORDER_COLUMNS.join(", ")}, ${partnerUserRef}::text AS partner_user_ref, ${pricePerUnitColumn("orders")}`;

const ORDER_SELECT_LIST = `${ORDER_COLUMNS.map((column) => `o.${column}`).join(", ")}, u.partner_user_ref, ${pricePerUnitColumn("o")}`;
const ORDER_FROM = "FROM orders o JOIN users u ON u.id = o.user_id";
const ORDER_BY_ID = "WHERE o.id = $1 AND ($2::text IS NULL OR o.partner_id = $2)";
const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The columns a list item shows (orderListItem), all a page of GET /orders reads. */
const LIST_COLUMNS = ["id", "escrow_order_id", "status", "token", "amount_usdc", "total_mxn", "exchange_rate", "aml_risk_level", "created_at", "completed_at", "expires_at"] as const;
const LIST_TIMESTAMPS: readonly string[] = ["created_at", "completed_at", "expires_at"] satisfies (typeof LIST_COLUMNS)[number][];
/** A list item's row: its timestamps as `Date`s in a whole order row, as ISO text in a page (orderPageQuery). */
type OrderListRow = Omit<Pick<OrderRow, (typeof LIST_COLUMNS)[number] | "partner_user_ref" | "price_per_unit">, "created_at" | "completed_at" | "expires_at"> & {
  created_at: Date | string;
  completed_at: Date | string | null;
  expires_at: Date | string;
};

const isoOf = (value: Date | string) => (typeof value === "string" ? value : value.toISOString());

export function orderListItem(row: OrderListRow) {
  return {
    id: row.id,
    escrowOrderId: row.escrow_order_id,
    status: row.status,
    token: row.token,
    amount: toJsonNumber(row.amount_usdc),
    totalMxn: toJsonNumber(row.total_mxn),
    pricePerUnit: toJsonNumber(row.price_per_unit),
    fxRateUsdMxn: toJsonNumber(row.exchange_rate),
    amlRiskLevel: row.aml_risk_level,
    partnerUserRef: row.partner_user_ref,
    createdAt: isoOf(row.created_at),
    completedAt: row.completed_at === null ? null : isoOf(row.completed_at),
    expiresAt: isoOf(row.expires_at),
  };
}

export interface DepositInstructions {
  chainId: number;
  escrowAddress: string;
  tokenAddress: string;
}

/** What the seller's wallet needs to approve the token and call `deposit` (decisions section 7). */
function depositView(row: OrderRow, chain: DepositInstructions, lockWindowSeconds: number, listingWindowSeconds: number) {
  return {
    chainId: chain.chainId,
    escrowAddress: chain.escrowAddress,
    tokenAddress: chain.tokenAddress,
    amountRaw: row.amount_raw,
    deadline: row.deposit_deadline.toISOString(),
    // As signed when the order was created (src/orders/terms.ts), whatever the configuration is now.
    terms: signedTermsOf(row, { tokenAddress: chain.tokenAddress, listingWindowSeconds, lockWindowSeconds }),
    signature: row.deposit_signature,
  };
}

export interface OrderViewContext {
  chain: DepositInstructions;
  /** The windows of today's configuration: only for orders whose signed terms were not kept (terms.ts). */
  listingWindowSeconds: number;
  lockWindowSeconds: number;
}

/** `POST /orders` response (spec: Order create response, plus `deposit`). */
export function orderCreateView(row: OrderRow, context: OrderViewContext) {
  return {
    id: row.id,
    escrowOrderId: row.escrow_order_id,
    status: row.status,
    token: row.token,
    amountUsdc: toJsonNumber(row.amount_usdc),
    totalMxn: toJsonNumber(row.total_mxn),
    exchangeRate: toJsonNumber(row.exchange_rate),
    sellerClabe: row.seller_clabe,
    amlRiskLevel: row.aml_risk_level,
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    deposit: depositView(row, context.chain, context.lockWindowSeconds, context.listingWindowSeconds),
  };
}

export interface TimelineEntry {
  id: string;
  event: string;
  data: Record<string, unknown>;
  timestamp: string;
}

/** `GET /orders/:id` response (spec: Order detail). Spread is computed here, never stored. */
export function orderDetailView(row: OrderRow, timeline: TimelineEntry[], context: OrderViewContext) {
  const price = money(row.price_per_unit);
  const difference = price.minus(row.exchange_rate);
  return {
    ...orderListItem(row),
    amountRaw: row.amount_raw,
    fxRateSource: "partner_quote",
    spread: {
      percent: toJsonNumber(difference.dividedBy(row.exchange_rate).times(100).toDecimalPlaces(4)),
      mxn: toJsonNumber(toCents(difference.times(row.amount_usdc))),
    },
    escrowTxHash: row.escrow_tx_hash,
    escrowStatus: row.escrow_tx_hash ? "CONFIRMED" : "PENDING",
    releaseTxHash: row.release_tx_hash,
    refundTxHash: row.refund_tx_hash,
    sellerWallet: row.seller_wallet,
    buyerWallet: row.buyer_wallet,
    lockedAt: iso(row.locked_at),
    lockExpiresAt: iso(row.lock_expires_at),
    bankAccount: { bankName: findParticipantByClabePrefix(row.bank_code)?.name ?? row.bank_code, bankCode: row.bank_code, clabe: row.seller_clabe },
    cepValidatedAt: iso(row.cep_validated_at),
    cepTrackingKey: row.cep_tracking_key,
    paymentConcept: row.payment_concept,
    amlRiskScore: row.aml_risk_score,
    dispute: row.dispute_opened_by ? { openedBy: row.dispute_opened_by, outcome: row.dispute_outcome } : null,
    timeline,
    deposit: depositView(row, context.chain, context.lockWindowSeconds, context.listingWindowSeconds),
  };
}

/** One order; another partner's order is indistinguishable from a missing one. `partnerId` null = any (admin). */
export async function getOrderRow(db: Queryable, partnerId: string | null, orderId: string): Promise<OrderRow> {
  const { rows } = await db.query<OrderRow>(prepared(`SELECT ${ORDER_SELECT_LIST} ${ORDER_FROM} ${ORDER_BY_ID}`, [orderId, partnerId]));
  if (!rows[0]) throw new NotFoundError(`No order ${orderId}`);
  return rows[0];
}

/** The timeline's entries as arrays in seq order, each selected beside the order's columns (ORDER_TIMELINE). */
export interface TimelineColumns {
  timeline_ids: string[] | null;
  timeline_events: string[] | null;
  timeline_data: Record<string, unknown>[] | null;
  timeline_at: Date[] | null;
}

/**
 * What a statement on `orders o` adds to read the order's timeline in the same statement: a detail shows
 * the order and its timeline as of one snapshot. Read as two statements, a transition committed between
 * them showed its timeline entry beside the columns from before it (LATE_DEPOSIT_REFUNDED with no
 * refundTxHash). Arrays rather than JSON, so the driver parses each timestamp as it parses a column.
 */
const agg = (expression: string, name: keyof TimelineColumns) => `array_agg(${expression} ORDER BY t.seq) AS ${name}`;
export const ORDER_TIMELINE = {
  columns: "tl.timeline_ids, tl.timeline_events, tl.timeline_data, tl.timeline_at",
  join: `LEFT JOIN LATERAL (SELECT ${agg("t.id", "timeline_ids")}, ${agg("t.event", "timeline_events")}, ${agg("t.data", "timeline_data")}, ${agg("t.created_at", "timeline_at")} FROM order_timeline t WHERE t.order_id = o.id) tl ON true`,
};

/** The timeline read by ORDER_TIMELINE (no entries: null arrays). */
export function timelineOf(row: TimelineColumns): TimelineEntry[] {
  return (row.timeline_ids ?? []).map((id, i) => ({ id, event: row.timeline_events![i]!, data: row.timeline_data![i]!, timestamp: row.timeline_at![i]!.toISOString() }));
}

/** getOrderRow with the order's timeline, in one statement (one snapshot of both). */
export async function getOrderWithTimeline(db: Queryable, partnerId: string | null, orderId: string): Promise<{ row: OrderRow; timeline: TimelineEntry[] }> {
  const { rows } = await db.query<OrderRow & TimelineColumns>(
    prepared(`SELECT ${ORDER_SELECT_LIST}, ${ORDER_TIMELINE.columns} ${ORDER_FROM} ${ORDER_TIMELINE.join} ${ORDER_BY_ID}`, [orderId, partnerId]),
  );
  if (!rows[0]) throw new NotFoundError(`No order ${orderId}`);
  return { row: rows[0], timeline: timelineOf(rows[0]) };
}

export interface OrderFilters {
  partnerId: string | null;
  status?: OrderStatus;
  partnerUserRef?: string;
  limit: number;
  offset: number;
}

/** Newest first (`createdAt` desc, then `id` desc), decisions section 6. */
export function listOrderRows(db: Queryable, filters: OrderFilters): Promise<{ rows: OrderListRow[]; total: number }> {
  return readPageWithTotal<OrderListRow>(db, orderPageQuery(filters), orderCountQuery(filters));
}

/**
 * One page of orders: served by orders (partner_id[, status], created_at DESC, id DESC), read in order up to
 * offset + limit rows. Only the list item's columns: the snapshot and signed terms (half a row's bytes,
 * each parsed as JSON by the driver) and the other timestamps are left in the database.
 *
 * The first page is written with its limit in the text and no OFFSET, other pages with both as parameters.
 * PostgreSQL prices a generic plan's `LIMIT $n` as a tenth of the rows, so a prepared page with them as
 * parameters was planned again at every call (its custom plans always priced lower), which cost more than
 * reading the page (0.29 ms against 0.26, docs/benchmarks.md). The first page, nearly every request, is
 * then planned once per session; at most MAX_PAGE_LIMIT texts of it per filter set, since limit is an integer
 * up to MAX_PAGE_LIMIT (checked here too: it is written into the text).
 */
export function orderPageQuery(filters: OrderFilters): Statement {
  const { where, values } = whereEqual([
    ["o.partner_id", filters.partnerId ?? undefined],
    ["o.status", filters.status],
    // The user is found by users (partner_id, partner_user_ref); by the ref alone it was a scan of every user.
    ["u.partner_id", filters.partnerUserRef !== undefined ? (filters.partnerId ?? undefined) : undefined],
    ["u.partner_user_ref", filters.partnerUserRef],
  ]);
  const columns = LIST_COLUMNS.map((column) => (LIST_TIMESTAMPS.includes(column) ? `${isoTimestampText(`o.${column}`)} AS ${column}` : `o.${column}`));
  // The order is by the column (`o.created_at`), not by the text of the same name in the select list.
  const select = `SELECT ${columns.join(", ")}, u.partner_user_ref, ${pricePerUnitColumn("o")} FROM orders o JOIN users u ON u.id = o.user_id ${where} ORDER BY o.created_at DESC, o.id DESC`;
  if (filters.offset === 0 && Number.isInteger(filters.limit) && filters.limit >= 1 && filters.limit <= MAX_PAGE_LIMIT) {
    return { text: `${select} LIMIT ${filters.limit}`, values };
  }
  return { text: `${select} LIMIT $${values.length + 1} OFFSET $${values.length + 2}`, values: [...values, filters.limit, filters.offset] };
}

/**
 * The exact number of orders matching the filters, without counting a partner's rows: by partner and
 * status it is the sum of `order_counts`, kept by a trigger in the transaction of every order change
 * (migration order-counts). With `partnerUserRef` it is an index-only count on orders (user_id, status),
 * bounded by that one user's orders. Only the filters given are in the text (as in orderPageQuery): a
 * `($1 IS NULL OR partner_id = $1)` condition cannot use an index in a generic plan, so the statement
 * with the page (withTotal) was planned again at every call.
 */
export function orderCountQuery(filters: Pick<OrderFilters, "partnerId" | "status" | "partnerUserRef">): Statement {
  if (filters.partnerUserRef !== undefined) {
    const { where, values } = whereEqual([
      ["u.partner_id", filters.partnerId ?? undefined],
      ["u.partner_user_ref", filters.partnerUserRef],
      ["o.status", filters.status],
    ]);
    return { text: `SELECT count(*) AS n FROM orders o JOIN users u ON u.id = o.user_id ${where}`, values };
  }
  const { where, values } = whereEqual([
    ["partner_id", filters.partnerId ?? undefined],
    ["status", filters.status],
  ]);
  return { text: `SELECT coalesce(sum(count), 0) AS n FROM order_counts ${where}`, values };
}

export type { OrderRow };
