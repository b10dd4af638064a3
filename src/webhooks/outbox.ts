import { prepared, type Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import type { PgBoss } from "../jobs/boss.ts";
import { ORDER_EVENT_TYPES, type EventType } from "../orders/machine.ts";
import { enqueueAttempt } from "./queue.ts";

/** The event kinds an outbox row may carry: the order's (orders/machine.ts owns the list). */
export const EVENT_TYPES = ORDER_EVENT_TYPES;
export type { EventType };

export const MAX_ATTEMPTS = 5;

const SEQUENCE_STAND_IN = '"sequence":0';

/** Fields every event's `data` carries; `data` passed to recordEvent adds to them and may not replace them. */
const CORE_FIELDS = ["orderId", "status", "partnerUserRef", "sequence"] as const;

export interface OutboxEvent {
  partnerId: string;
  orderId: string;
  partnerUserRef: string;
  eventType: EventType;
  /** The order's status after the change. */
  status: string;
  /** What the event adds: escrowTxHash, buyerWallet, lockExpiresAt, completedAt, refundTxHash, outcome... */
  data: Record<string, unknown>;
  /** Payload `timestamp`; defaults to now. */
  occurredAt?: Date;
}

export interface RecordedEvent {
  eventId: string;
  sequence: number;
  /** Null when the partner had no webhook URL when the event happened: the event is kept, nothing is sent. */
  deliveryId: string | null;
  /** The payload exactly as it is (or would be) sent. */
  body: string;
}

/**
 * Records an order event in the outbox. Call it inside the transaction that changes the order's state:
 * the event, its per-order sequence, its delivery record and the first attempt's job all commit with
 * that change or not at all, so an event is never lost and never sent for a rolled-back change.
 *
 * - `sequence` is 1, 2, 3... per order in the order events are recorded (and committed): a counter row
 *   per order, locked until commit, hands it out even without the caller's order lock, and a unique
 *   (order_id, sequence) constraint backs it.
 * - The payload `{ event, timestamp, data }` is serialized once here and stored; every attempt sends
 *   exactly those bytes.
 * - A partner without a webhook URL gets no delivery record: the event is still stored with its
 *   sequence (the order's event history), but setting a URL later does not send past events.
 */
export async function recordEvent(tx: Queryable, event: OutboxEvent, queue: { boss: PgBoss }): Promise<RecordedEvent> {
  if (!(EVENT_TYPES as readonly string[]).includes(event.eventType)) throw new Error(`Unknown webhook event type "${event.eventType}"`);
  for (const field of CORE_FIELDS) {
    if (field in event.data) throw new Error(`Event data must not set "${field}": recordEvent fills it`);
  }
  // The job row is written through the caller's transaction: the queue instance only supplies pg-boss's metadata.
  const { boss } = queue;

  // The payload around its sequence, which the counter hands out in the statement: serialized with a
  // stand-in and cut there. Its first `"sequence":0` is the stand-in: the fields before it are
  // serialized strings (their quotes escaped) and the event's own data comes after it.
  const occurredAt = event.occurredAt ?? new Date();
  const serialized = JSON.stringify({
    event: event.eventType,
    timestamp: occurredAt.toISOString(),
    data: { orderId: event.orderId, status: event.status, partnerUserRef: event.partnerUserRef, sequence: 0, ...event.data },
  });
  const cut = serialized.indexOf(SEQUENCE_STAND_IN) + SEQUENCE_STAND_IN.length - 1;
  const [beforeSequence, afterSequence] = [serialized.slice(0, cut), serialized.slice(cut + 1)];

  // One round trip: the order's owner, the event's sequence (the counter moves only for an order of this
  // partner), the event and, when the partner has a webhook URL, its delivery record.
  const eventId = newId("evt");
  const deliveryId = newId("whd");
  const { rows } = await tx.query<{ partner_id: string; sequence: number | null; delivery_id: string | null }>(
    prepared(
      `WITH owner AS (SELECT o.partner_id, p.webhook_url FROM orders o JOIN partners p ON p.id = o.partner_id WHERE o.id = $1),
            counter AS (
              INSERT INTO webhook_order_sequences (order_id, last_sequence) SELECT $1, 1 FROM owner WHERE owner.partner_id = $2
              ON CONFLICT (order_id) DO UPDATE SET last_sequence = webhook_order_sequences.last_sequence + 1
              RETURNING last_sequence),
            recorded AS (
              INSERT INTO webhook_events (id, partner_id, order_id, sequence, event_type, order_status, body, occurred_at)
              SELECT $3, $2, $1, counter.last_sequence, $4, $5, $6::text || counter.last_sequence || $7::text, $8 FROM counter
              RETURNING id, sequence),
            delivery AS (
              INSERT INTO webhook_deliveries (id, event_id, partner_id, order_id, sequence, event_type, max_attempts, next_attempt_at)
              SELECT $9, recorded.id, $2, $1, recorded.sequence, $4, $10, clock_timestamp() FROM recorded, owner WHERE owner.webhook_url IS NOT NULL
              RETURNING id)
       SELECT owner.partner_id, recorded.sequence, (SELECT id FROM delivery) AS delivery_id FROM owner LEFT JOIN recorded ON true`,
      [event.orderId, event.partnerId, eventId, event.eventType, event.status, beforeSequence, afterSequence, occurredAt, deliveryId, MAX_ATTEMPTS],
    ),
  );
  const owner = rows[0];
  if (!owner) throw new Error(`Order ${event.orderId} does not exist`);
  if (owner.sequence === null) throw new Error(`Order ${event.orderId} does not belong to partner ${event.partnerId}`);
  const { sequence } = owner;
  const body = `${beforeSequence}${sequence}${afterSequence}`;
  if (owner.delivery_id === null) return { eventId, sequence, deliveryId: null, body };
  await enqueueAttempt(boss, tx, { deliveryId, series: 1, attempt: 1 });
  return { eventId, sequence, deliveryId, body };
}
