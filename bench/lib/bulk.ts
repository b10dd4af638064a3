// Bulk orders for the size-dependent figures, inserted with SQL in the shape POST /orders writes: a
// real order made through the API is the template (its quote, its columns, its machine snapshot), and
// each copy gets its own user, quote, ids, escrow order id, creation time and a status with the columns
// that status implies (wallets, lock times, transaction hashes, completion), its snapshot's value and
// orderId set to match. Timeline rows and outbox rows are not copied: no query measured here reads them.
import type pg from "pg";
import { PgBoss } from "pg-boss";
import { ORDER_TIMER_QUEUE, timerJobId, type TimerJob } from "../../src/jobs/queues.ts";

export interface StatusShare {
  status: "PENDING_DEPOSIT" | "ACTIVE" | "LOCKED" | "COMPLETED" | "EXPIRED" | "REFUNDED";
  /** Percent of the rows (the shares add up to 100). */
  percent: number;
}

export interface BulkOrdersOptions {
  partnerId: string;
  /** A real order (made through the API) whose row and quote are copied. */
  templateOrderId: string;
  count: number;
  users: number;
  /** Distinguishes this batch's ids and user refs. */
  tag: string;
  mix: StatusShare[];
  /**
   * Creation times spread evenly over this many hours before now (newest first); an order still awaiting its
   * deposit within its deposit window, as in a database that has run this long (one past it has expired):
   * its timer is not a backlog the service works through while a figure measures.
   */
  spreadHours: number;
}

/** A CASE over g % 100 giving each row its status by the shares (constants only, no input). */
function statusCase(mix: StatusShare[]): string {
  let upper = 0;
  const arms = mix.map((share) => {
    upper += share.percent;
    return `WHEN g % 100 < ${upper} THEN '${share.status}'`;
  });
  if (upper !== 100) throw new Error(`status shares add up to ${upper}, not 100`);
  return `CASE ${arms.join(" ")} END`;
}

/** Inserts `count` users' worth of quotes and orders for the partner; returns the rows inserted. */
export async function insertBulkOrders(pool: pg.Pool, options: BulkOrdersOptions): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(
      `INSERT INTO users (id, partner_id, partner_user_ref, kyc_status, kyc_tier, aml_risk_level, created_at, updated_at)
       SELECT 'usr_' || substr(md5($2 || '-u-' || g), 1, 24), $1, 'bench-' || $2 || '-' || g, 'NOT_REQUIRED', 'NONE', 'LOW',
              now() - make_interval(hours => $4::int + 720), now()
         FROM generate_series(1, $3::int) g`,
      [options.partnerId, options.tag, options.users, options.spreadHours],
    );
    const { rowCount } = await client.query(
      `WITH t AS (SELECT * FROM orders WHERE id = $1),
            q AS (SELECT * FROM quotes WHERE id = (SELECT quote_id FROM t)),
            gen AS (
              SELECT g,
                     'ord_' || substr(md5($3 || '-o-' || g), 1, 24) AS id,
                     'qt_' || substr(md5($3 || '-q-' || g), 1, 24) AS quote_id,
                     'usr_' || substr(md5($3 || '-u-' || (1 + g % $5::int)), 1, 24) AS user_id,
                     '0x' || md5($3 || '-e1-' || g) || md5($3 || '-e2-' || g) AS escrow_order_id,
                     now() - make_interval(secs => CASE WHEN s.status = 'PENDING_DEPOSIT'
                                                        THEN mod(((g::double precision / $4::int) * $6::int * 3600)::numeric, extract(epoch FROM t.deposit_deadline - t.created_at))
                                                        ELSE (g::double precision / $4::int) * $6::int * 3600 END) AS created_at,
                     s.status
                FROM (SELECT g, ${statusCase(options.mix)} AS status FROM generate_series(1, $4::int) g) s, t
            ),
            quotes_in AS (
              INSERT INTO quotes (id, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at, used_at, created_at)
              SELECT r.quote_id, $2, r.user_id, q.amount_usdc, q.exchange_rate, q.rate_source, q.gross_mxn, q.fee_percent, q.fee_mxn, q.fee_recipient, q.net_mxn,
                     r.created_at + interval '5 minutes', r.created_at, r.created_at - interval '20 seconds'
                FROM gen r, q
              RETURNING 1
            )
       INSERT INTO orders (id, partner_id, user_id, quote_id, escrow_order_id, token, amount_usdc, amount_raw, total_mxn, exchange_rate, fee_percent,
                           fee_recipient, fee_bps, fee_recipient_address, treasury_share_bps, seller_clabe, bank_code, deposit_deadline, deposit_signature,
                           aml_risk_score, aml_risk_level, machine_snapshot, version, status, expires_at, escrow_tx_hash, seller_wallet, buyer_wallet,
                           locked_at, lock_expires_at, release_tx_hash, refund_tx_hash, completed_at, created_at, updated_at)
       SELECT r.id, $2, r.user_id, r.quote_id, r.escrow_order_id, t.token, t.amount_usdc, t.amount_raw, t.total_mxn, t.exchange_rate, t.fee_percent,
              t.fee_recipient, t.fee_bps, t.fee_recipient_address, t.treasury_share_bps, t.seller_clabe, t.bank_code,
              r.created_at + (t.deposit_deadline - t.created_at), t.deposit_signature, t.aml_risk_score, t.aml_risk_level,
              jsonb_set(jsonb_set(t.machine_snapshot, '{value}', to_jsonb(r.status)), '{context,orderId}', to_jsonb(r.id)),
              CASE r.status WHEN 'PENDING_DEPOSIT' THEN 1 WHEN 'ACTIVE' THEN 2 WHEN 'LOCKED' THEN 3 WHEN 'EXPIRED' THEN 2 ELSE 5 END,
              r.status,
              CASE WHEN r.status = 'ACTIVE' THEN greatest(r.created_at, now()) + interval '1 day'
                   ELSE r.created_at + (t.deposit_deadline - t.created_at) END,
              CASE WHEN r.status IN ('PENDING_DEPOSIT', 'EXPIRED') THEN NULL ELSE '0x' || md5(r.id || 'd') || md5(r.id || 'D') END,
              CASE WHEN r.status IN ('PENDING_DEPOSIT', 'EXPIRED') THEN NULL ELSE '0x15d34aaf54267db7d7c367839aaf71a00a2c6a65' END,
              CASE WHEN r.status IN ('LOCKED', 'COMPLETED') THEN '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc' END,
              CASE WHEN r.status IN ('LOCKED', 'COMPLETED') THEN r.created_at + interval '3 minutes' END,
              CASE WHEN r.status IN ('LOCKED', 'COMPLETED') THEN r.created_at + interval '1 day 3 minutes' END,
              CASE WHEN r.status = 'COMPLETED' THEN '0x' || md5(r.id || 'r') || md5(r.id || 'R') END,
              CASE WHEN r.status = 'REFUNDED' THEN '0x' || md5(r.id || 'f') || md5(r.id || 'F') END,
              CASE WHEN r.status = 'COMPLETED' THEN r.created_at + interval '25 minutes' END,
              r.created_at, r.created_at
         FROM gen r, t
        WHERE (SELECT count(*) FROM quotes_in) > 0`,
      [options.templateOrderId, options.partnerId, options.tag, options.count, options.users, options.spreadHours],
    );
    await client.query("COMMIT");
    return rowCount ?? 0;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The timers the open orders of a bulk batch would have: a DEPOSIT_TIMEOUT job per PENDING_DEPOSIT
 * order and a LISTING_TIMEOUT job per ACTIVE order, due at the order's expiresAt, in the service's
 * pg-boss queue (the same job shape the order actor's startTimer effect sends).
 */
export async function insertOpenOrderTimers(pool: pg.Pool, boss: PgBoss, partnerId: string, templateOrderId: string): Promise<number> {
  const { rows } = await pool.query<{ id: string; status: string; expires_at: Date }>(
    "SELECT id, status, expires_at FROM orders WHERE partner_id = $1 AND id <> $2 AND status IN ('PENDING_DEPOSIT', 'ACTIVE')",
    [partnerId, templateOrderId],
  );
  for (let i = 0; i < rows.length; i += 1000) {
    const jobs = rows.slice(i, i + 1000).map((row) => {
      const timer: TimerJob = { orderId: row.id, timer: row.status === "ACTIVE" ? "LISTING_TIMEOUT" : "DEPOSIT_TIMEOUT", dueAt: row.expires_at.toISOString() };
      return { id: timerJobId(timer), data: timer, startAfter: row.expires_at };
    });
    await boss.insert(ORDER_TIMER_QUEUE, jobs);
  }
  return rows.length;
}

/**
 * Runs `work` with a pg-boss instance of the bench's own on the service's queue schema: it writes
 * jobs as the service does (the service's workers take them), and neither migrates, supervises nor
 * works.
 */
export async function withServiceQueues<T>(databaseUrl: string, work: (boss: PgBoss) => Promise<T>): Promise<T> {
  const boss = new PgBoss({ connectionString: databaseUrl, schema: "pgboss", supervise: false, schedule: false, migrate: false });
  boss.on("error", () => undefined);
  await boss.start();
  try {
    return await work(boss);
  } finally {
    await boss.stop({ graceful: false, timeout: 5_000 });
  }
}

/**
 * Runs `work` with the tables' secondary indexes and foreign keys dropped, then puts each back from its
 * own definition (`pg_get_indexdef`, `pg_get_constraintdef`): one sort per index instead of a million
 * scattered insertions into each, and one join per foreign key (validating every row, as before)
 * instead of a lookup per row, as PostgreSQL's manual advises for bulk loads ("Populating a Database").
 * Primary keys and unique constraints stay. Only for a database no service uses meanwhile (figure 10's
 * own).
 */
export async function withIndexesRebuilt<T>(pool: pg.Pool, tables: string[], work: () => Promise<T>): Promise<T> {
  const { rows: indexes } = await pool.query<{ name: string; definition: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i
      WHERE i.indrelid = ANY($1::regclass[]) AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
    [tables],
  );
  const { rows: foreignKeys } = await pool.query<{ table: string; name: string; definition: string }>(
    `SELECT conrelid::regclass::text AS table, quote_ident(conname) AS name, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE contype = 'f' AND conrelid = ANY($1::regclass[])`,
    [tables],
  );
  for (const key of foreignKeys) await pool.query(`ALTER TABLE ${key.table} DROP CONSTRAINT ${key.name}`);
  for (const index of indexes) await pool.query(`DROP INDEX ${index.name}`);
  try {
    return await work();
  } finally {
    for (const index of indexes) await pool.query(index.definition);
    for (const key of foreignKeys) await pool.query(`ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition}`);
  }
}
