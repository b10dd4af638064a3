import type { Pool, PoolClient, Queryable } from "../db/pool.ts";
import { allAnswered, prepared, withTransaction } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import { initialOrderTransition, orderMachine, transitionOrder, type ChainAction, type DisputeOutcome, type EventType, type OrderContext, type OrderEffect, type OrderEvent, type OrderStatus, type TimerKind } from "./machine.ts";
import { PermanentError } from "../domain/errors.ts";

/**
 * What a transition's effects need from the outside, implemented by the jobs and webhooks layers and
 * called inside the transition's transaction (so an effect exists if and only if the transition does).
 */
export interface OrderEffectPorts {
  /**
   * The transition's partner events (`notify` effects), recorded by the statement that writes the order's
   * row: CTEs with parameters from `$<at + 1>` that record them for the order `orderRow` (an earlier CTE
   * returning `(id, webhook_url)`), the result `columns` they add, and what `complete` does after the
   * statement in the same transaction (webhooks/outbox.ts).
   */
  recordEvents(events: OrderNotification[], options: { orderRow: string; at: number }): OrderEventsRecording;
  startTimer(tx: Queryable, timer: { orderId: string; timer: TimerKind; dueAt: string }): Promise<void>;
  /** Deletes the order's timer of this kind and due time: a moot timer, which the machine names only while it is not due yet (machine.ts `cancelPendingTimers`). */
  cancelTimer(tx: Queryable, timer: { orderId: string; timer: TimerKind; dueAt: string }): Promise<void>;
  sendTransaction(tx: Queryable, request: { orderId: string; action: ChainAction; requestKey: string; params?: { outcome: DisputeOutcome } }): Promise<void>;
  verifyPayment(tx: Queryable, request: { orderId: string; cepTrackingKey: string; operationDate: string; senderBankCode: string }): Promise<void>;
  /**
   * These ports with the jobs they queue in `tx` (timers, transactions, deliveries) held back, and `flush`
   * to write them, which the caller awaits before `tx` commits: many transitions in one transaction (a
   * block's chain events) then write their jobs in one statement a queue rather than one a job.
   */
  gatheringJobs(tx: Queryable): { ports: OrderEffectPorts; flush(): Promise<void> };
}

export interface OrderNotification {
  partnerId: string;
  orderId: string;
  partnerUserRef: string;
  eventType: EventType;
  status: OrderStatus;
  data: Record<string, unknown>;
}

export interface OrderEventsRecording {
  ctes: string;
  values: unknown[];
  columns: string;
  complete(tx: Queryable, row: Record<string, unknown>): Promise<unknown>;
}

export interface AppliedTransition {
  orderId: string;
  changed: boolean;
  status: OrderStatus;
  version: number;
  /** An on-chain event already applied (its once-only mark was there): nothing was consulted. */
  replayed: boolean;
}

/**
 * An on-chain event's once-only mark: its id (the indexer's row id and block hash) and where it was, so
 * that a reorganisation deeper than the confirmations that removes it can be found (sync/escrow-events.ts).
 */
export interface ChainEventMark {
  id: string;
  indexerSchema: string;
  blockNumber: string;
  eventName: string;
  txHash: string;
}

interface ActorRow {
  id: string;
  partner_id: string;
  partner_user_ref: string;
  machine_snapshot: { value: OrderStatus; context: OrderContext };
  version: number;
}

const CONTEXT_COLUMNS: [keyof OrderContext, string][] = [
  ["expiresAt", "expires_at"],
  ["escrowTxHash", "escrow_tx_hash"],
  ["sellerWallet", "seller_wallet"],
  ["buyerWallet", "buyer_wallet"],
  ["lockedAt", "locked_at"],
  ["lockExpiresAt", "lock_expires_at"],
  ["cepTrackingKey", "cep_tracking_key"],
  ["cepHash", "cep_hash"],
  ["cepValidatedAt", "cep_validated_at"],
  ["releaseTxHash", "release_tx_hash"],
  ["refundTxHash", "refund_tx_hash"],
  ["completedAt", "completed_at"],
  ["disputeOpenedBy", "dispute_opened_by"],
  ["disputeOutcome", "dispute_outcome"],
];

async function performEffects(
  tx: PoolClient,
  ports: OrderEffectPorts,
  order: { id: string; partnerId: string; partnerUserRef: string; status: OrderStatus; version: number },
  effects: OrderEffect[],
): Promise<void> {
  for (const effect of effects) {
    switch (effect.type) {
      case "timeline":
      case "notify":
        break; // written with the order's row (writeRow)
      case "startTimer":
        await ports.startTimer(tx, { orderId: order.id, timer: effect.params.timer, dueAt: effect.params.dueAt });
        break;
      case "cancelTimer":
        await ports.cancelTimer(tx, { orderId: order.id, timer: effect.params.timer, dueAt: effect.params.dueAt });
        break;
      case "sendTransaction":
        // One request per order version: a re-delivered job or event cannot ask for a second transaction.
        await ports.sendTransaction(tx, {
          orderId: order.id,
          action: effect.params.action,
          requestKey: `${order.id}:${effect.params.action}:${order.version}`,
          ...(effect.params.params ? { params: effect.params.params } : {}),
        });
        break;
      case "verifyPayment":
        await ports.verifyPayment(tx, { orderId: order.id, ...effect.params });
        break;
    }
  }
}

/** A statement on the order's row: its text, its parameters, and statements it depends on (`before`, CTEs such as `name AS (...)`). */
export interface OrderRowStatement {
  text: string;
  values: unknown[];
  before?: string;
}

/**
 * `update` (an UPDATE or INSERT of the order's row, `RETURNING id` and any other columns) with the
 * transition's timeline entries and partner events written in the same statement, in effect order: one
 * round trip for the row, its timeline and its events. Returns the row as `update` returned it, undefined
 * when it wrote none. The other effects are performed after it (performEffects), and the events'
 * `complete` too (the deliveries' first attempts).
 */
async function writeRow<Row extends object = { id: string }>(
  tx: PoolClient,
  ports: OrderEffectPorts,
  { text: update, values, before }: OrderRowStatement,
  effects: OrderEffect[],
  order: { id: string; partnerId: string; partnerUserRef: string; status: OrderStatus },
): Promise<Row | undefined> {
  const entries = effects.flatMap((effect) => (effect.type === "timeline" ? [effect.params] : []));
  const at = values.length;
  const ctes = [
    ...(before ? [before] : []),
    `updated AS (${update})`,
    `timeline AS (INSERT INTO order_timeline (id, order_id, event, data)
       SELECT t.id, updated.id, t.event, t.data::jsonb FROM updated, unnest($${at + 1}::text[], $${at + 2}::text[], $${at + 3}::text[]) WITH ORDINALITY AS t (id, event, data, n) ORDER BY t.n)`,
  ];
  const allValues = [...values, entries.map(() => newId("evt")), entries.map((entry) => entry.event), entries.map((entry) => JSON.stringify(entry.data))];
  const notifications = effects.flatMap((effect) =>
    effect.type === "notify"
      ? [{ partnerId: order.partnerId, orderId: order.id, partnerUserRef: order.partnerUserRef, eventType: effect.params.eventType, status: order.status, data: effect.params.data }]
      : [],
  );
  let recording: OrderEventsRecording | undefined;
  if (notifications.length > 0) {
    ctes.push(`event_order AS (SELECT updated.id, p.webhook_url FROM updated JOIN partners p ON p.id = $${at + 4})`);
    allValues.push(order.partnerId);
    recording = ports.recordEvents(notifications, { orderRow: "event_order", at: at + 4 });
    ctes.push(recording.ctes);
    allValues.push(...recording.values);
  }
  // The row as its statement returned it (RETURNING), beside what the events' recording reads back.
  const { rows } = await tx.query<Row & Record<string, unknown>>(
    prepared(`WITH ${ctes.join(",\n")}\n SELECT updated.*${recording ? `, ${recording.columns}` : ""} FROM updated`, allValues),
  );
  const row = rows[0];
  if (row) await recording?.complete(tx, row);
  return row;
}

/**
 * A transition's writes: its row's statement (writeRow) and its other effects (performEffects), the first
 * of which is sent behind that statement without waiting for its answer, one round trip fewer a
 * transition (the pool's sessions pipeline). The effects never depend on the answer, and PostgreSQL runs
 * them after the statement, so they see the row it wrote. When the statement writes no row, the effects
 * are written all the same, and the caller fails its transaction.
 */
async function writeTransition<Row extends object = { id: string }>(
  tx: PoolClient,
  ports: OrderEffectPorts,
  statement: OrderRowStatement,
  effects: OrderEffect[],
  order: { id: string; partnerId: string; partnerUserRef: string; status: OrderStatus; version: number },
): Promise<Row | undefined> {
  // writeRow sends its statement before its first await: it is on the wire ahead of every effect.
  const [row] = await allAnswered([writeRow<Row>(tx, ports, statement, effects, order), performEffects(tx, ports, order, effects)]);
  return row;
}

function effectsOf(actions: { type: string; params: unknown }[]): OrderEffect[] {
  return actions.filter((action) => !action.type.startsWith("xstate.")) as OrderEffect[];
}

/**
 * Inserts a new order with its actor, inside the caller's transaction: `insertOrder` is the row's INSERT
 * (`RETURNING id` and whatever else the caller reads back) given the initial snapshot and status to store,
 * and the row, its CREATED timeline entry and `order.created` (same statement) and the deposit timer are
 * written together. The row is written once, already in its first state: an INSERT then an UPDATE of the
 * status would write every index of the order twice. Returns the row as inserted; undefined when the
 * INSERT inserted no row (its condition, such as a quote consumed in `before`, did not hold), and the
 * caller then rolls its transaction back: the timer was written all the same (writeTransition).
 */
export async function insertOrderWithActor<Row extends object>(
  tx: PoolClient,
  ports: OrderEffectPorts,
  order: { id: string; partnerId: string; partnerUserRef: string; expiresAt: Date },
  insertOrder: (actor: { snapshot: string; status: OrderStatus }) => OrderRowStatement,
): Promise<Row | undefined> {
  const [snapshot, actions] = initialOrderTransition({ orderId: order.id, expiresAt: order.expiresAt.toISOString() });
  const status = snapshot.value as OrderStatus;
  const effects = effectsOf(actions);
  const statement = insertOrder({ snapshot: JSON.stringify({ value: status, context: snapshot.context }), status });
  return writeTransition<Row>(tx, ports, statement, effects, { ...order, status, version: 1 });
}

/**
 * Applies one event to one order: the row is locked (so no two instances apply events to one order at
 * once), the snapshot restored, the machine consulted, and the new snapshot, its version and every
 * effect written in one transaction. `chainEvent` makes an on-chain event apply at most once. `guard` sees
 * the order as locked, before the machine: a rule outside the machine checked under the same lock (a cap
 * on reports being verified, say), whose throw leaves the order unchanged.
 */
export async function applyOrderEvent(
  pool: Pool,
  ports: OrderEffectPorts,
  orderId: string,
  event: OrderEvent,
  options: { chainEvent?: ChainEventMark; tx?: PoolClient; guard?: (snapshot: ActorRow["machine_snapshot"]) => void } = {},
): Promise<AppliedTransition> {
  const run = async (tx: PoolClient): Promise<AppliedTransition> => {
    // The row lock and, for an on-chain event, its once-only mark in one round trip: a mark already there
    // (the event replayed) leaves the order as it is. NO KEY UPDATE: exclusive among the order's writers,
    // while rows that only reference the order (a buyer's lock permit) are not held up by its transition.
    const mark = options.chainEvent;
    const { rows } = await tx.query<ActorRow & { fresh: boolean }>(
      prepared(
        `WITH mark AS (INSERT INTO applied_chain_events (event_id, order_id, indexer_schema, block_number, event_name, transaction_hash)
                       SELECT $2, $1, $3, $4, $5, $6 WHERE $2::text IS NOT NULL ON CONFLICT DO NOTHING RETURNING 1)
         SELECT o.id, o.partner_id, u.partner_user_ref, o.machine_snapshot, o.version, $2::text IS NULL OR EXISTS (SELECT 1 FROM mark) AS fresh
           FROM orders o JOIN users u ON u.id = o.user_id WHERE o.id = $1 FOR NO KEY UPDATE OF o`,
        [orderId, mark?.id ?? null, mark?.indexerSchema ?? null, mark?.blockNumber ?? null, mark?.eventName ?? null, mark?.txHash ?? null],
      ),
    );
    const row = rows[0];
    if (!row) throw new PermanentError(`order ${orderId} does not exist`);
    const unchanged = { orderId, changed: false, status: row.machine_snapshot.value, version: row.version, replayed: !row.fresh };
    if (!row.fresh) return unchanged;
    options.guard?.(row.machine_snapshot);
    const current = orderMachine.resolveState(row.machine_snapshot);
    const [next, actions] = transitionOrder(current, event);
    const effects = effectsOf(actions);
    if (next.value === current.value && effects.length === 0 && next.context === current.context) return unchanged;

    const status = next.value as OrderStatus;
    const version = row.version + 1;
    const values: unknown[] = [orderId, row.version, JSON.stringify({ value: status, context: next.context }), status];
    const sets = ["machine_snapshot = $3", "status = $4", "version = version + 1", "updated_at = now()"];
    for (const [field, column] of CONTEXT_COLUMNS) {
      values.push(next.context[field]);
      sets.push(`${column} = $${values.length}`);
    }
    const update = { text: `UPDATE orders SET ${sets.join(", ")} WHERE id = $1 AND version = $2 RETURNING id`, values };
    const order = { id: orderId, partnerId: row.partner_id, partnerUserRef: row.partner_user_ref, status };
    if (!(await writeTransition(tx, ports, update, effects, { ...order, version }))) throw new Error(`order ${orderId} changed under its lock`);
    return { orderId, changed: true, status, version, replayed: false };
  };
  return options.tx ? run(options.tx) : withTransaction(pool, run);
}
