import type { Queryable } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import { money, rawToUsdc, toJsonNumber } from "../domain/money.ts";
import { mexicoMonth, mexicoMonthRange, MEXICO_CITY_ZONE } from "../domain/periods.ts";

// Revenue per partner and month (decisions sections 3 and 5), computed from the orders that completed
// in the month: a fee is collected at release, so an order counts in the America/Mexico_City calendar
// month of its `completedAt` (dispute releases included, since they pay the fee split too).
//
// - volume: the completed orders' `totalMxn` (what buyers paid) and `amountUsdc` (what was escrowed).
// - partnerFees: fees of orders whose feeRecipient is PARTNER. In USDC exactly as the escrow paid them:
//   fee = floor(amountRaw x feeBps / 10000); the service's share = floor(fee x treasuryShareBps / 10000)
//   went to the treasury and the rest to the partner's fee wallet, in the release transaction. In MXN:
//   the quote's feeAmountMxn, the share = feeAmountMxn x treasuryShareBps / 10000 rounded half-up to
//   cents per order, then summed. The share rate is the one signed into each order's terms (the tier's
//   at order creation), not today's. USER fees go back to the seller and NONE has no fee: no share.
// - owedToPartnerUsdc (decisions 5): a partner without a fee wallet is paid through the treasury: its
//   orders' terms name the treasury as fee recipient, so the whole fee was credited to the treasury, and
//   the partner's part (fee - service share, exactly as above) is owed to it, settled off-chain. The sum of
//   partnerNet over those orders, in USDC (exact token units, `owedToPartnerUsdcRaw`).

export interface Amounts {
  mxn: number;
  usdc: number;
  /** USDC in 6-decimal token units, an integer string. */
  usdcRaw: string;
}

export interface PartnerRevenue {
  partnerId: string;
  name: string;
  tier: string;
  completedOrders: number;
  volume: Amounts;
  /** Completed orders that carried a PARTNER fee. */
  feeOrders: number;
  /** Fees charged for the partner (before the service's share). */
  partnerFees: Amounts;
  /** The service's revenue share of those fees (paid to the treasury). */
  serviceShare: Amounts;
  /** The partner's part: partnerFees - serviceShare (credited to its fee wallet, or owed when it had none). */
  partnerNet: Amounts;
  /** The part of partnerNet the treasury received for a partner without a fee wallet: owed to the partner. */
  owedToPartnerUsdc: number;
  /** owedToPartnerUsdc in 6-decimal token units, an integer string. */
  owedToPartnerUsdcRaw: string;
}

interface RevenueRow {
  partner_id: string;
  name: string;
  tier: string;
  completed_orders: number;
  fee_orders: number;
  volume_mxn: string;
  volume_raw: string;
  fees_mxn: string;
  fees_raw: string;
  share_mxn: string;
  share_raw: string;
  owed_raw: string;
}

const amounts = (mxn: string, raw: string): Amounts => ({ mxn: toJsonNumber(money(mxn).toDecimalPlaces(2)), usdc: toJsonNumber(rawToUsdc(BigInt(raw))), usdcRaw: raw });

function minus(a: Amounts, b: Amounts): Amounts {
  const raw = (BigInt(a.usdcRaw) - BigInt(b.usdcRaw)).toString();
  return { mxn: toJsonNumber(money(a.mxn).minus(b.mxn)), usdc: toJsonNumber(rawToUsdc(BigInt(raw))), usdcRaw: raw };
}

function sum(list: Amounts[]): Amounts {
  const raw = list.reduce((total, item) => total + BigInt(item.usdcRaw), 0n).toString();
  const mxn = list.reduce((total, item) => total.plus(item.mxn), money(0));
  return { mxn: toJsonNumber(mxn), usdc: toJsonNumber(rawToUsdc(BigInt(raw))), usdcRaw: raw };
}

function revenueOf(row: RevenueRow): PartnerRevenue {
  const partnerFees = amounts(row.fees_mxn, row.fees_raw);
  const serviceShare = amounts(row.share_mxn, row.share_raw);
  return {
    partnerId: row.partner_id,
    name: row.name,
    tier: row.tier,
    completedOrders: row.completed_orders,
    volume: amounts(row.volume_mxn, row.volume_raw),
    feeOrders: row.fee_orders,
    partnerFees,
    serviceShare,
    partnerNet: minus(partnerFees, serviceShare),
    ...owed(BigInt(row.owed_raw)),
  };
}

const owed = (raw: bigint) => ({ owedToPartnerUsdc: toJsonNumber(rawToUsdc(raw)), owedToPartnerUsdcRaw: raw.toString() });

// Integer token arithmetic in PostgreSQL numeric (exact): floor() of a quotient by 10000 of integers.
const REVENUE_SQL = `
  SELECT p.id AS partner_id, p.name, p.tier,
         count(o.id)::int AS completed_orders,
         (count(o.id) FILTER (WHERE o.fee_recipient = 'PARTNER' AND o.fee_bps > 0))::int AS fee_orders,
         coalesce(sum(o.total_mxn), 0) AS volume_mxn,
         coalesce(sum(o.amount_raw), 0) AS volume_raw,
         coalesce(sum(q.fee_mxn) FILTER (WHERE o.fee_recipient = 'PARTNER'), 0) AS fees_mxn,
         coalesce(sum(floor(o.amount_raw * o.fee_bps / 10000)) FILTER (WHERE o.fee_recipient = 'PARTNER'), 0) AS fees_raw,
         coalesce(sum(round(q.fee_mxn * o.treasury_share_bps / 10000, 2)) FILTER (WHERE o.fee_recipient = 'PARTNER'), 0) AS share_mxn,
         coalesce(sum(floor(floor(o.amount_raw * o.fee_bps / 10000) * o.treasury_share_bps / 10000)) FILTER (WHERE o.fee_recipient = 'PARTNER'), 0) AS share_raw,
         coalesce(sum(floor(o.amount_raw * o.fee_bps / 10000) - floor(floor(o.amount_raw * o.fee_bps / 10000) * o.treasury_share_bps / 10000))
           FILTER (WHERE o.fee_recipient = 'PARTNER' AND o.partner_fee_owed), 0) AS owed_raw
    FROM partners p
    LEFT JOIN orders o ON o.partner_id = p.id AND o.status = 'COMPLETED' AND o.completed_at >= $1 AND o.completed_at < $2
    LEFT JOIN quotes q ON q.id = o.quote_id
   WHERE ($3::text IS NULL OR p.id = $3)
   GROUP BY p.id, p.name, p.tier`;

function period(month: string | undefined) {
  const name = month ?? mexicoMonth(new Date());
  const { from, to } = mexicoMonthRange(name);
  return { month: name, timeZone: MEXICO_CITY_ZONE, from: from.toISOString(), to: to.toISOString(), range: [from, to] as const };
}

/** `GET /admin/v1/revenue?month=`: every partner with a completed order in the month, and the totals. */
export async function revenueReport(db: Queryable, month?: string) {
  const { range, ...shown } = period(month);
  const { rows } = await db.query<RevenueRow>(`${REVENUE_SQL} HAVING count(o.id) > 0 ORDER BY p.name, p.id`, [range[0], range[1], null]);
  const partners = rows.map(revenueOf);
  return {
    ...shown,
    partners,
    totals: {
      completedOrders: partners.reduce((total, row) => total + row.completedOrders, 0),
      feeOrders: partners.reduce((total, row) => total + row.feeOrders, 0),
      volume: sum(partners.map((row) => row.volume)),
      partnerFees: sum(partners.map((row) => row.partnerFees)),
      serviceShare: sum(partners.map((row) => row.serviceShare)),
      partnerNet: sum(partners.map((row) => row.partnerNet)),
      ...owed(partners.reduce((total, row) => total + BigInt(row.owedToPartnerUsdcRaw), 0n)),
    },
  };
}

/**
 * `GET /admin/v1/partners/:id/revenue?month=`: one partner's month (zeros when nothing completed), with
 * `owedToPartnerUsdc`. The one function for a partner's revenue: the partner dashboard calls it too.
 */
export async function partnerRevenue(db: Queryable, partnerId: string, month?: string) {
  const { range, ...shown } = period(month);
  const { rows } = await db.query<RevenueRow>(REVENUE_SQL, [range[0], range[1], partnerId]);
  if (!rows[0]) throw new NotFoundError(`Partner ${partnerId} does not exist`);
  return { ...shown, ...revenueOf(rows[0]) };
}
