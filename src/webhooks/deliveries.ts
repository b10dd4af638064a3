import { recordAudit, type AuditContext } from "../partners/audit.ts";
import { whereEqual, pageOf, type Page } from "../db/filters.ts";
import { withTransaction, type Pool, type Queryable } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import type { PgBoss } from "../jobs/boss.ts";
import { enqueueAttempt } from "./queue.ts";

export const DELIVERY_STATUSES = ["PENDING", "DELIVERED", "FAILED"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

interface DeliveryRow {
  id: string;
  partner_id: string;
  order_id: string;
  sequence: number;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  series: number;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  error_message: string | null;
  created_at: Date;
}

/** The spec's webhook delivery record, field for field. */
export interface DeliveryRecord {
  id: string;
  orderId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  maxAttempts: number;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  errorMessage: string | null;
  createdAt: string;
}

/** What operators see beside the record. */
export interface AdminDeliveryRecord extends DeliveryRecord {
  partnerId: string;
  sequence: number;
  series: number;
}

const iso = (value: Date | null) => (value ? value.toISOString() : null);

export function deliveryView(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    orderId: row.order_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastAttemptAt: iso(row.last_attempt_at),
    nextAttemptAt: iso(row.next_attempt_at),
    deliveredAt: iso(row.delivered_at),
    errorMessage: row.error_message,
    createdAt: row.created_at.toISOString(),
  };
}

function adminView(row: DeliveryRow): AdminDeliveryRecord {
  return { ...deliveryView(row), partnerId: row.partner_id, sequence: row.sequence, series: row.series };
}

export interface DeliveryFilter {
  partnerId?: string;
  status?: DeliveryStatus;
  orderId?: string;
  eventType?: string;
  limit: number;
  offset: number;
}

async function queryDeliveries(db: Queryable, filter: DeliveryFilter): Promise<{ rows: DeliveryRow[]; total: number }> {
  const { where, values } = whereEqual([
    ["partner_id", filter.partnerId],
    ["status", filter.status],
    ["order_id", filter.orderId],
    ["event_type", filter.eventType],
  ]);
  const { rows: counted } = await db.query<{ total: number }>(`SELECT count(*)::int AS total FROM webhook_deliveries ${where}`, values);
  const { rows } = await db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries ${where} ORDER BY created_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
    [...values, filter.limit, filter.offset],
  );
  return { rows, total: counted[0]!.total };
}

export type DeliveryPage<T> = Page<"deliveries", T>;

/** `GET /webhooks`: one partner's deliveries, newest first. */
export async function listPartnerDeliveries(
  db: Queryable,
  partnerId: string,
  filter: Omit<DeliveryFilter, "partnerId">,
): Promise<DeliveryPage<DeliveryRecord>> {
  const { rows, total } = await queryDeliveries(db, { ...filter, partnerId });
  return pageOf("deliveries", rows.map(deliveryView), total, filter);
}

/** Operator console: every partner's deliveries, newest first. */
export async function listAllDeliveries(db: Queryable, filter: DeliveryFilter): Promise<DeliveryPage<AdminDeliveryRecord>> {
  const { rows, total } = await queryDeliveries(db, filter);
  return pageOf("deliveries", rows.map(adminView), total, filter);
}

/** One order's deliveries in sequence order (the admin order detail shows them). */
export async function listOrderDeliveries(db: Queryable, orderId: string): Promise<AdminDeliveryRecord[]> {
  const { rows } = await db.query<DeliveryRow>("SELECT * FROM webhook_deliveries WHERE order_id = $1 ORDER BY sequence, created_at", [orderId]);
  return rows.map(adminView);
}

/** Deliveries per status, all partners (for GET /admin/v1/stats). */
export async function countDeliveriesByStatus(db: Queryable): Promise<Record<DeliveryStatus, number>> {
  const { rows } = await db.query<{ status: DeliveryStatus; n: number }>("SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status");
  const counts: Record<DeliveryStatus, number> = { PENDING: 0, DELIVERED: 0, FAILED: 0 };
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

export interface AttemptLogEntry {
  series: number;
  attempt: number;
  startedAt: string;
  finishedAt: string;
  url: string | null;
  responseStatus: number | null;
  errorMessage: string | null;
}

export interface DeliveryDetail extends AdminDeliveryRecord {
  /** The payload exactly as sent. */
  body: string;
  attemptLog: AttemptLogEntry[];
}

export async function getDeliveryDetail(db: Queryable, id: string): Promise<DeliveryDetail> {
  const { rows } = await db.query<DeliveryRow & { body: string }>(
    "SELECT d.*, e.body FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.id = $1",
    [id],
  );
  const row = rows[0];
  if (!row) throw new NotFoundError(`Delivery ${id} does not exist`);
  const { rows: attempts } = await db.query<{
    series: number;
    attempt: number;
    started_at: Date;
    finished_at: Date;
    url: string | null;
    response_status: number | null;
    error_message: string | null;
  }>("SELECT * FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY series, attempt", [id]);
  return {
    ...adminView(row),
    body: row.body,
    attemptLog: attempts.map((a) => ({
      series: a.series,
      attempt: a.attempt,
      startedAt: a.started_at.toISOString(),
      finishedAt: a.finished_at.toISOString(),
      url: a.url,
      responseStatus: a.response_status,
      errorMessage: a.error_message,
    })),
  };
}

/**
 * Operator redelivery: a new attempt series for the same delivery id and the same stored body. The
 * record starts over (attempts 0, PENDING, due now) and the first attempt of the series is enqueued in
 * the same transaction, with its audit entry when `audit` is given; `partnerId` limits it to one partner's
 * deliveries (another's is NOT_FOUND). An attempt of the previous series still on the wire is logged under
 * its series when it ends and leaves the record alone; the new series' first attempt waits for its claim
 * to be released. Jobs left from the previous series find themselves stale and do nothing.
 */
export async function redeliver(
  pool: Pool,
  boss: PgBoss,
  id: string,
  options: { partnerId?: string; audit?: AuditContext } = {},
): Promise<AdminDeliveryRecord> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<DeliveryRow>(
      `UPDATE webhook_deliveries
          SET series = series + 1, status = 'PENDING', attempts = 0, last_attempt_at = NULL,
              next_attempt_at = clock_timestamp(), delivered_at = NULL, error_message = NULL, swept_at = NULL
        WHERE id = $1 AND ($2::text IS NULL OR partner_id = $2)
        RETURNING *`,
      [id, options.partnerId ?? null],
    );
    const row = rows[0];
    if (!row) throw new NotFoundError(`Delivery ${id} does not exist`);
    if (options.audit) await recordAudit(tx, row.partner_id, "delivery.redelivered", options.audit, { deliveryId: row.id, orderId: row.order_id, eventType: row.event_type, series: row.series });
    await enqueueAttempt(boss, tx, { deliveryId: row.id, series: row.series, attempt: 1 });
    return adminView(row);
  });
}
