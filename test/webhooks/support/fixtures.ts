import { randomBytes } from "node:crypto";
import { withTransaction, type Pool, type Queryable } from "../../../src/db/pool.ts";
import type { PgBoss } from "../../../src/jobs/boss.ts";
import { recordEvent, type EventType, type RecordedEvent } from "../../../src/webhooks/outbox.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

// Values for the orders columns a fixture must fill. Any other NOT NULL column without a default (the
// orders code adds columns as it grows) is filled from its type, so these fixtures follow the schema.
function knownOrderValues(ids: { orderId: string; partnerId: string; userId: string; quoteId: string }): Record<string, unknown> {
  return {
    id: ids.orderId,
    partner_id: ids.partnerId,
    user_id: ids.userId,
    quote_id: ids.quoteId,
    escrow_order_id: `0x${hex(32)}`,
    status: "PENDING_DEPOSIT",
    token: "USDC",
    amount_usdc: "10",
    amount_raw: "10000000",
    total_mxn: "172.50",
    exchange_rate: "17.25",
    fee_percent: "0",
    fee_recipient: "NONE",
    seller_clabe: "002010077777777771",
    bank_code: "002",
    aml_risk_score: 0,
    aml_risk_level: "LOW",
    expires_at: new Date(Date.now() + 3_600_000),
    machine_snapshot: "{}",
  };
}

function valueForType(dataType: string): unknown {
  if (/int|numeric|double|real/.test(dataType)) return 0;
  if (/timestamp|date/.test(dataType)) return new Date();
  if (/json/.test(dataType)) return "{}";
  if (dataType === "boolean") return false;
  if (dataType === "ARRAY") return "{}";
  return `fixture-${hex(8)}`;
}

export interface OrderFixture {
  orderId: string;
  partnerId: string;
  partnerUserRef: string;
}

/** A user, a quote and an order row for the partner, inserted directly (the order code is not needed). */
export async function createOrderFixture(db: Queryable, partnerId: string, partnerUserRef = `user-${hex(4)}`): Promise<OrderFixture> {
  const userId = `usr_${hex(12)}`;
  const quoteId = `qt_${hex(12)}`;
  const orderId = `ord_${hex(12)}`;
  await db.query(
    "INSERT INTO users (id, partner_id, partner_user_ref) VALUES ($1, $2, $3) ON CONFLICT (partner_id, partner_user_ref) DO NOTHING",
    [userId, partnerId, partnerUserRef],
  );
  const { rows: users } = await db.query<{ id: string }>("SELECT id FROM users WHERE partner_id = $1 AND partner_user_ref = $2", [partnerId, partnerUserRef]);
  const actualUserId = users[0]!.id;
  await db.query(
    `INSERT INTO quotes (id, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at, used_at)
     VALUES ($1, $2, $3, 10, 17.25, 'central_bank', 172.50, 0, 0, 'NONE', 172.50, now() + interval '5 minutes', now())`,
    [quoteId, partnerId, actualUserId],
  );
  const { rows: columns } = await db.query<{ column_name: string; data_type: string }>(
    `SELECT column_name, data_type FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'orders' AND is_nullable = 'NO' AND column_default IS NULL`,
  );
  const known = knownOrderValues({ orderId, partnerId, userId: actualUserId, quoteId });
  const names = columns.map((c) => c.column_name);
  const values = columns.map((c) => (c.column_name in known ? known[c.column_name] : valueForType(c.data_type)));
  await db.query(`INSERT INTO orders (${names.join(", ")}) VALUES (${names.map((_, i) => `$${i + 1}`).join(", ")})`, values);
  return { orderId, partnerId, partnerUserRef };
}

/** Records one event for the order in its own committed transaction, as the order code would. */
export function emit(
  service: { pool: Pool; boss: PgBoss },
  order: OrderFixture,
  eventType: EventType,
  status: string,
  data: Record<string, unknown> = {},
): Promise<RecordedEvent> {
  return withTransaction(service.pool, (tx) =>
    recordEvent(tx, { partnerId: order.partnerId, orderId: order.orderId, partnerUserRef: order.partnerUserRef, eventType, status, data }, { boss: service.boss }),
  );
}
