import type { Queryable } from "../db/pool.ts";
import { ORDER_STATUSES, type OrderStatus } from "../orders/machine.ts";
import { countDeliveriesByStatus } from "../webhooks/deliveries.ts";
import { SANCTIONS_HOLD_PENDING, THIRD_PARTY_PAYMENT_PENDING } from "./orders.ts";

const TERMINAL: OrderStatus[] = ["COMPLETED", "EXPIRED", "REFUNDED"];

/**
 * `GET /admin/v1/stats`: orders per state (every state of the machine, zeros included), webhook
 * deliveries per status, and the sizes of the operator queues (open disputes; HIGH-risk orders that
 * have not ended; orders held for a sanctions review, or for a third-party payment, nobody has decided).
 */
export async function adminStats(db: Queryable) {
  const [orders, highRisk, deliveries, held, thirdParty] = await Promise.all([
    db.query<{ status: OrderStatus; n: number }>("SELECT status, count(*)::int AS n FROM orders GROUP BY status"),
    db.query<{ n: number }>("SELECT count(*)::int AS n FROM orders WHERE aml_risk_level = 'HIGH' AND status <> ALL($1::text[])", [TERMINAL]),
    countDeliveriesByStatus(db),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders o WHERE ${SANCTIONS_HOLD_PENDING}`),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders o WHERE ${THIRD_PARTY_PAYMENT_PENDING}`),
  ]);
  const byStatus = Object.fromEntries(ORDER_STATUSES.map((status) => [status, 0])) as Record<OrderStatus, number>;
  for (const row of orders.rows) byStatus[row.status] = row.n;
  const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);
  return {
    orders: { byStatus, total: total(byStatus) },
    deliveries: { byStatus: deliveries, total: total(deliveries) },
    queues: { disputes: byStatus.DISPUTED, highRisk: highRisk.rows[0]!.n, sanctionsHolds: held.rows[0]!.n, thirdPartyPayments: thirdParty.rows[0]!.n },
    generatedAt: new Date().toISOString(),
  };
}
