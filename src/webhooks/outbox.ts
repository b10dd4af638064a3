import { prepared, type Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import type { PgBoss } from "../jobs/boss.ts";
import { jobWritesAtOnce, type JobWrites } from "../jobs/job-writes.ts";
import { ORDER_EVENT_TYPES, type EventType } from "../orders/machine.ts";
import { writeAttempts } from "./queue.ts";

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
 * CTEs of a statement that record one order's events, in order, for use inside the statement that changes
 * the order (orders/store.ts) or on their own (recordEvent): parameters from `$<at + 1>`, and `orderRow`,
 * the name of an earlier CTE of the statement returning the order's row as `(id, webhook_url)` (one row when
 * the events are to be recorded, none when not). The result column `event_deliveries` holds the deliveries'
 * ids, `event_sequences` the events' sequences, each in the events' order (null for none). After the
 * statement, `complete` queues the deliveries' first attempts in the same transaction, through `jobWritesIn`.
 *
 * - `sequence` is 1, 2, 3... per order in the order events are recorded (and committed): a counter row
 *   per order, moved by the number of events and locked until commit, hands them out even without the
 *   caller's order lock, and a unique (order_id, sequence) constraint backs it.
 * - Each payload `{ event, timestamp, data }` is serialized once here and stored; every attempt sends
 *   exactly those bytes (PostgreSQL writes the sequence into it).
 * - A partner without a webhook URL gets no delivery record: the event is still stored with its
 *   sequence (the order's event history), but setting a URL later does not send past events.
 */
export function orderEventsStatement(events: OutboxEvent[], options: { orderRow: string; at: number }, jobWritesIn: (tx: Queryable) => JobWrites) {
  const payloads = events.map((event) => {
    if (!(EVENT_TYPES as readonly string[]).includes(event.eventType)) throw new Error(`Unknown webhook event type "${event.eventType}"`);
    for (const field of CORE_FIELDS) {
      if (field in event.data) throw new Error(`Event data must not set "${field}": recordEvent fills it`);
    }
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
    return { eventId: newId("evt"), deliveryId: newId("whd"), occurredAt, beforeSequence: serialized.slice(0, cut), afterSequence: serialized.slice(cut + 1) };
  });
  const partnerIds = new Set(events.map((event) => event.partnerId));
  if (partnerIds.size !== 1 || new Set(events.map((event) => event.orderId)).size !== 1) throw new Error("orderEventsStatement records events of one order");
  const $ = (n: number) => `$${options.at + n}`;
  const { orderRow } = options;
  return {
    ctes: `event_counter AS (
        INSERT INTO webhook_order_sequences (order_id, last_sequence) SELECT id, ${$(1)}::int FROM ${orderRow}
        ON CONFLICT (order_id) DO UPDATE SET last_sequence = webhook_order_sequences.last_sequence + excluded.last_sequence
        RETURNING order_id, last_sequence - ${$(1)}::int AS last_before),
      event_recorded AS (
        INSERT INTO webhook_events (id, partner_id, order_id, sequence, event_type, order_status, body, occurred_at)
        SELECT e.id, ${$(2)}, c.order_id, c.last_before + e.n, e.event_type, e.status, e.before_sequence || (c.last_before + e.n) || e.after_sequence, e.occurred_at
          FROM event_counter c, unnest(${$(3)}::text[], ${$(4)}::text[], ${$(5)}::text[], ${$(6)}::text[], ${$(7)}::text[], ${$(8)}::timestamptz[])
               WITH ORDINALITY AS e (id, event_type, status, before_sequence, after_sequence, occurred_at, n)
        RETURNING id, order_id, sequence, event_type),
      event_delivery AS (
        INSERT INTO webhook_deliveries (id, event_id, partner_id, order_id, sequence, event_type, max_attempts, next_attempt_at)
        SELECT d.id, r.id, ${$(2)}, r.order_id, r.sequence, r.event_type, ${$(10)}, clock_timestamp()
          FROM event_recorded r JOIN unnest(${$(3)}::text[], ${$(9)}::text[]) AS d (event_id, id) ON d.event_id = r.id, ${orderRow} o
         WHERE o.webhook_url IS NOT NULL
        RETURNING id, sequence)`,
    values: [
      events.length,
      events[0]!.partnerId,
      payloads.map((payload) => payload.eventId),
      events.map((event) => event.eventType),
      events.map((event) => event.status),
      payloads.map((payload) => payload.beforeSequence),
      payloads.map((payload) => payload.afterSequence),
      payloads.map((payload) => payload.occurredAt),
      payloads.map((payload) => payload.deliveryId),
      MAX_ATTEMPTS,
    ],
    columns: `(SELECT array_agg(id ORDER BY sequence) FROM event_delivery) AS event_deliveries, (SELECT array_agg(sequence ORDER BY sequence) FROM event_recorded) AS event_sequences`,
    /** The events as recorded, given the statement's result row; their deliveries' first attempts queued in `tx`. */
    async complete(tx: Queryable, row: { event_deliveries: string[] | null; event_sequences: number[] | null }): Promise<RecordedEvent[]> {
      const sequences = row.event_sequences ?? [];
      const deliveries = new Set(row.event_deliveries ?? []);
      const recorded = payloads.flatMap((payload, index) => {
        const sequence = sequences[index];
        if (sequence === undefined) return [];
        const deliveryId = deliveries.has(payload.deliveryId) ? payload.deliveryId : null;
        return [{ eventId: payload.eventId, sequence, deliveryId, body: `${payload.beforeSequence}${sequence}${payload.afterSequence}` }];
      });
      await writeAttempts(
        jobWritesIn(tx),
        recorded.flatMap(({ deliveryId }) => (deliveryId ? [{ job: { deliveryId, series: 1, attempt: 1 } }] : [])),
      );
      return recorded;
    },
  };
}

/**
 * Records an order event in the outbox on its own (`orderEventsStatement` for what is recorded). Call it
 * inside the transaction that changes the order's state: the event, its per-order sequence, its delivery
 * record and the first attempt's job all commit with that change or not at all, so an event is never lost
 * and never sent for a rolled-back change. The order's own transitions record theirs inside the statement
 * that writes the order's row (orders/store.ts).
 */
export async function recordEvent(tx: Queryable, event: OutboxEvent, queue: { boss: PgBoss }): Promise<RecordedEvent> {
  // The order's owner is checked in the statement: the counter moves only for an order of this partner.
  const recording = orderEventsStatement([event], { orderRow: "event_order", at: 1 }, (tx) => jobWritesAtOnce(queue.boss, tx));
  const { rows } = await tx.query<{ partner_id: string; event_deliveries: string[] | null; event_sequences: number[] | null }>(
    prepared(
      `WITH owner AS (SELECT o.id, o.partner_id, p.webhook_url FROM orders o JOIN partners p ON p.id = o.partner_id WHERE o.id = $1),
            event_order AS (SELECT id, webhook_url FROM owner WHERE partner_id = $3),
            ${recording.ctes}
       SELECT owner.partner_id, ${recording.columns} FROM owner`,
      [event.orderId, ...recording.values],
    ),
  );
  const owner = rows[0];
  if (!owner) throw new Error(`Order ${event.orderId} does not exist`);
  const [recorded] = await recording.complete(tx, owner);
  if (!recorded) throw new Error(`Order ${event.orderId} does not belong to partner ${event.partnerId}`);
  return recorded;
}
