import { eventTable, indexerTablesMissing, reputationSql } from "../sync/indexer-tables.ts";
import { whereEqual, pageOf } from "../db/filters.ts";
import type { Queryable } from "../db/pool.ts";
import { rawToUsdc, toJsonNumber } from "../domain/money.ts";
import { lockGraceEndsAt, type OrderContext, type OrderStatus } from "../orders/machine.ts";
import { getOrderWithTimeline, orderDetailView, orderListItem, pricePerUnitColumn, type OrderRow, type OrderViewContext, type TimelineEntry } from "../orders/queries.ts";
import { listOrderDeliveries } from "../webhooks/deliveries.ts";
import { orderPath } from "./order-path.ts";

// Orders as operators see them (decisions section 12): every partner's, with what partners never see:
// the machine snapshot, the webhook deliveries, the chain transactions the service sent, and the
// on-chain view the indexer keeps (escrow status, payout split, the parties' reputation).

export const AML_RISK_LEVELS = ["LOW", "MEDIUM", "HIGH"] as const;
export type AmlRiskLevel = (typeof AML_RISK_LEVELS)[number];

/**
 * Operator review queues besides the HIGH-risk one: SANCTIONS_HOLD, orders whose buyer (wallet or KYC
 * screening) or depositing seller is sanctioned; THIRD_PARTY_PAYMENT, orders paid from someone else's
 * account (decisions 8). Both hold undecided orders only.
 */
export const REVIEW_QUEUES = ["SANCTIONS_HOLD", "THIRD_PARTY_PAYMENT"] as const;
export type ReviewQueue = (typeof REVIEW_QUEUES)[number];

/** SQL condition of an order held for a sanctions review nobody has decided (the hold lives in the machine snapshot). */
export const SANCTIONS_HOLD_PENDING = `(((o.machine_snapshot->'context'->'sanctionsHold'->>'buyerWallet' IS NOT NULL
    AND o.machine_snapshot->'context'->'sanctionsHold'->>'decision' IS NULL)
  OR (o.machine_snapshot->'context'->'depositHold'->>'sellerWallet' IS NOT NULL
    AND o.machine_snapshot->'context'->'depositHold'->>'decision' IS NULL))
  AND o.status NOT IN ('COMPLETED', 'EXPIRED', 'REFUNDED'))`;

/** SQL condition of an order held for a third-party payment nobody has decided. */
export const THIRD_PARTY_PAYMENT_PENDING = `(o.machine_snapshot->'context'->'thirdPartyHold'->>'cepTrackingKey' IS NOT NULL
  AND o.machine_snapshot->'context'->'thirdPartyHold'->>'decision' IS NULL
  AND o.status NOT IN ('COMPLETED', 'EXPIRED', 'REFUNDED'))`;

/** The holds of an order as operators see them: who paid beside the buyer, and until when a release can still be sent. */
export function orderHolds(context: OrderContext) {
  const thirdParty = context.thirdPartyHold ?? null;
  return {
    sanctionsHold: context.sanctionsHold ?? null,
    depositHold: context.depositHold ?? null,
    thirdPartyPayment: thirdParty && { ...thirdParty, releasePossibleUntil: lockGraceEndsAt(context) },
  };
}

/** Operators' timeline: a THIRD_PARTY_PAYMENT entry names the payer (kept out of the stored entry, which partners read). */
function withPayer(timeline: TimelineEntry[], context: OrderContext): TimelineEntry[] {
  const hold = context.thirdPartyHold;
  if (!hold) return timeline;
  return timeline.map((entry) => (entry.event === "THIRD_PARTY_PAYMENT" ? { ...entry, data: { ...entry.data, payer: hold.payer, comparedBy: hold.comparedBy } } : entry));
}

export interface AdminOrderFilters {
  status?: OrderStatus;
  review?: ReviewQueue;
  partnerId?: string;
  partnerUserRef?: string;
  amlRiskLevel?: AmlRiskLevel;
  limit: number;
  offset: number;
}

type AdminOrderRow = OrderRow & { partner_name: string };

const SELECT_ADMIN_ORDER = `SELECT o.*, u.partner_user_ref, ${pricePerUnitColumn("o")}, p.name AS partner_name
  FROM orders o JOIN users u ON u.id = o.user_id JOIN partners p ON p.id = o.partner_id`;

/** The partner API's list item plus who the order belongs to, its risk score and its dispute. */
export function adminOrderListItem(row: AdminOrderRow) {
  return {
    ...orderListItem(row),
    partnerId: row.partner_id,
    partnerName: row.partner_name,
    amlRiskScore: row.aml_risk_score,
    dispute: row.dispute_opened_by
      ? { openedBy: row.dispute_opened_by, outcome: row.dispute_outcome, resolutionRequest: (row.machine_snapshot as { context: OrderContext }).context.resolutionRequest ?? null }
      : null,
    ...orderHolds((row.machine_snapshot as { context: OrderContext }).context),
  };
}

/** Every partner's orders, newest first (`createdAt` desc, then `id` desc), filtered. */
export async function listAdminOrders(db: Queryable, filters: AdminOrderFilters) {
  const { where, values } = whereEqual([
    ["o.status", filters.status],
    ["o.partner_id", filters.partnerId],
    ["u.partner_user_ref", filters.partnerUserRef],
    ["o.aml_risk_level", filters.amlRiskLevel],
  ]);
  const queue = filters.review === "SANCTIONS_HOLD" ? SANCTIONS_HOLD_PENDING : filters.review === "THIRD_PARTY_PAYMENT" ? THIRD_PARTY_PAYMENT_PENDING : undefined;
  const filtered = queue ? (where ? `${where} AND ${queue}` : `WHERE ${queue}`) : where;
  const [{ rows }, count] = await Promise.all([
    db.query<AdminOrderRow>(`${SELECT_ADMIN_ORDER} ${filtered} ORDER BY o.created_at DESC, o.id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`, [
      ...values,
      filters.limit,
      filters.offset,
    ]),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders o JOIN users u ON u.id = o.user_id ${filtered}`, values),
  ]);
  const total = count.rows[0]!.n;
  return pageOf("orders", rows.map(adminOrderListItem), total, filters);
}

interface TransactionRow {
  id: string;
  action: string;
  params: Record<string, unknown>;
  signer: string;
  nonce: string | null;
  tx_hash: string | null;
  status: string;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The escrow transactions the service recorded for an order, in the order they were asked for. */
export async function orderTransactions(db: Queryable, orderId: string) {
  const { rows } = await db.query<TransactionRow>(
    "SELECT id, action, params, signer, nonce, tx_hash, status, error, created_at, updated_at FROM chain_transactions WHERE order_id = $1 ORDER BY created_at, id",
    [orderId],
  );
  return rows.map((row) => ({
    id: row.id,
    action: row.action,
    params: row.params,
    signer: row.signer,
    nonce: row.nonce === null ? null : Number(row.nonce),
    txHash: row.tx_hash,
    status: row.status,
    error: row.error,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }));
}

export interface Reputation {
  address: string;
  /** The contract's score: 0 until a dispute is lost, then -50 per loss. */
  score: number;
  /** Block and time of the last change; null for an account never penalised. */
  updatedBlock: number | null;
  updatedAt: string | null;
}

/** An account's reputation as the indexer read it from the chain (no ReputationChanged event: the contract's 0). */
export async function readReputation(db: Queryable, indexerSchema: string, address: string): Promise<Reputation> {
  const account = address.toLowerCase();
  const never = { address: account, score: 0, updatedBlock: null, updatedAt: null };
  try {
    const { rows } = await db.query<{ score: string; block_number: string; block_timestamp: string }>(reputationSql(indexerSchema, "$1"), [account]);
    const row = rows[0];
    if (!row) return never;
    return { address: account, score: Number(row.score), updatedBlock: Number(row.block_number), updatedAt: new Date(Number(row.block_timestamp) * 1000).toISOString() };
  } catch (error) {
    // The indexer has not created its tables yet: nothing is known on chain, which is the contract's 0.
    if (indexerTablesMissing(error)) return never;
    throw error;
  }
}

/** An escrow event as the escrow's view is folded from it (args as the indexer stored them: src/stack/indexer-process.ts). */
interface EscrowEventArgs {
  event_name: string;
  args: Record<string, string | number | boolean>;
}

/** What the view shows of an escrow order; null until its Deposited event is indexed. */
interface EscrowState {
  status: "Active" | "Locked" | "Disputed" | "Released" | "Refunded";
  seller: string;
  buyer: string | null;
  amount: string;
  lockExpiresAt: string | null;
  disputeOpenedBy: string | null;
  payout: { buyer: string; fee: string; treasury: string } | null;
}

/**
 * The escrow order as its events left it, in chain order: the contract's status and parties, and the
 * payout split once released. DisputeResolved with a new lock expiry (NO_FAULT_RETRY) puts the order back
 * to Locked; every other outcome is followed in its transaction by Released or Refunded.
 */
function foldEscrowEvents(events: EscrowEventArgs[]): EscrowState | null {
  let state: EscrowState | null = null;
  const address = (value: string | number | boolean | undefined) => String(value).toLowerCase();
  for (const { event_name: name, args } of events) {
    if (name === "Deposited") {
      state = { status: "Active", seller: address(args.seller), buyer: null, amount: String(args.amount), lockExpiresAt: null, disputeOpenedBy: null, payout: null };
      continue;
    }
    if (!state) continue;
    if (name === "Locked") state = { ...state, status: "Locked", buyer: address(args.buyer), lockExpiresAt: String(args.lockExpiresAt) };
    else if (name === "Released") state = { ...state, status: "Released", buyer: address(args.buyer), payout: { buyer: String(args.buyerAmount), fee: String(args.feeAmount), treasury: String(args.treasuryAmount) } };
    else if (name === "Refunded") state = { ...state, status: "Refunded" };
    else if (name === "DisputeOpened") state = { ...state, status: "Disputed", disputeOpenedBy: address(args.openedBy) };
    else if (name === "DisputeResolved" && args.newLockExpiresAt !== undefined && String(args.newLockExpiresAt) !== "0") {
      state = { ...state, status: "Locked", lockExpiresAt: String(args.newLockExpiresAt) };
    }
  }
  return state;
}

/** The indexer's view of the escrow order (on-chain status and, once released, the payout split), from its events. */
export async function readEscrow(db: Queryable, indexerSchema: string, escrowOrderId: string) {
  let rows: EscrowEventArgs[];
  try {
    ({ rows } = await db.query<EscrowEventArgs>(`SELECT event_name, args FROM ${eventTable(indexerSchema)} WHERE order_id = $1 ORDER BY block_number, log_index`, [escrowOrderId.toLowerCase()]));
  } catch (error) {
    if (indexerTablesMissing(error)) return null;
    throw error;
  }
  const state = foldEscrowEvents(rows);
  if (!state) return null;
  const usdc = (raw: string) => toJsonNumber(rawToUsdc(BigInt(raw)));
  return {
    /** The contract's Status name: Active, Locked, Disputed, Released or Refunded. */
    status: state.status,
    seller: state.seller,
    buyer: state.buyer,
    amountUsdc: usdc(state.amount),
    lockExpiresAt: state.lockExpiresAt ? new Date(Number(state.lockExpiresAt) * 1000).toISOString() : null,
    disputeOpenedBy: state.disputeOpenedBy,
    payout: state.payout && { buyerUsdc: usdc(state.payout.buyer), feeUsdc: usdc(state.payout.fee), treasuryUsdc: usdc(state.payout.treasury) },
  };
}

export interface AdminOrderDeps {
  view: OrderViewContext;
  /** The indexer's schema; without it the on-chain view and reputation are null. */
  indexerSchema: string | undefined;
}

/**
 * `GET /admin/v1/orders/:id`: the partner API's detail, plus the partner, the fee split, the dispute
 * with any resolution asked for, the machine snapshot, the path through the chart, the webhook
 * deliveries, the chain transactions, the escrow as indexed and both parties' reputation.
 */
export async function adminOrderDetail(db: Queryable, deps: AdminOrderDeps, orderId: string) {
  const { row, timeline } = await getOrderWithTimeline(db, null, orderId);
  const [deliveries, transactions, partner] = await Promise.all([
    listOrderDeliveries(db, row.id),
    orderTransactions(db, row.id),
    db.query<{ name: string; tier: string }>("SELECT name, tier FROM partners WHERE id = $1", [row.partner_id]),
  ]);
  const snapshot = row.machine_snapshot as { value: OrderStatus; context: OrderContext };
  const schema = deps.indexerSchema;
  const party = async (address: string | null) => (schema && address ? readReputation(db, schema, address) : null);
  const [escrow, seller, buyer] = await Promise.all([
    schema ? readEscrow(db, schema, row.escrow_order_id) : Promise.resolve(null),
    party(row.seller_wallet),
    party(row.buyer_wallet),
  ]);
  return {
    ...orderDetailView(row, withPayer(timeline, snapshot.context), deps.view),
    partnerId: row.partner_id,
    partnerName: partner.rows[0]?.name ?? null,
    partnerTier: partner.rows[0]?.tier ?? null,
    fee: { feePercent: toJsonNumber(row.fee_percent), feeRecipient: row.fee_recipient, feeBps: row.fee_bps, treasuryShareBps: row.treasury_share_bps },
    dispute: row.dispute_opened_by
      ? { openedBy: row.dispute_opened_by, outcome: row.dispute_outcome, resolutionRequest: snapshot.context.resolutionRequest ?? null }
      : null,
    ...orderHolds(snapshot.context),
    machine: { value: snapshot.value, context: snapshot.context, version: row.version },
    path: orderPath(timeline),
    deliveries,
    transactions,
    escrow,
    reputation: { seller, buyer },
  };
}
