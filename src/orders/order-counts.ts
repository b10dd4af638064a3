import type { Queryable } from "../db/pool.ts";

/** Only one instance folds at a time: two folds deleting the same rows in different orders could deadlock. */
const FOLD_LOCK = 7_210_024;

/**
 * Folds the orders' counter ledger (migration order-counts-ledger): every partner's and status's rows that
 * are more than one become one row of their sum, in one statement, so the totals read (sums) never change.
 * Rows appended by order changes while it runs are not in its snapshot and stay for the next fold; an
 * order change appends and never waits on it. Returns how many rows it folded away (0 when another
 * instance holds the fold).
 */
export async function foldOrderCounts(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ folded: number }>(
    `WITH lock AS (SELECT pg_try_advisory_xact_lock(${FOLD_LOCK}) AS held),
          many AS (SELECT partner_id, status FROM order_counts WHERE (SELECT held FROM lock) GROUP BY partner_id, status HAVING count(*) > 1),
          gone AS (DELETE FROM order_counts c USING many m WHERE c.partner_id = m.partner_id AND c.status = m.status RETURNING c.partner_id, c.status, c.count),
          summed AS (INSERT INTO order_counts (partner_id, status, count)
                     SELECT partner_id, status, sum(count) FROM gone GROUP BY partner_id, status HAVING sum(count) <> 0 RETURNING 1)
     SELECT ((SELECT count(*) FROM gone) - (SELECT count(*) FROM summed))::int AS folded`,
  );
  return rows[0]!.folded;
}
