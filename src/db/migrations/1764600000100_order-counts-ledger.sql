-- Up Migration

-- Issue 24: the orders' counters become a ledger. A change of an order's status upserted its partner's
-- counter rows for the old and the new status (one of 64 shards) and held them to its commit. A transaction
-- that changes several orders (a block's escrow events, applied together) took such rows statement after
-- statement, in no common order with another transaction's: two of them deadlocked on them under figure 9's
-- load (PostgreSQL's log, "while inserting index tuple in relation order_counts"), and before that 64 shards
-- only made it rarer. Now each change appends its +1 and -1 rows and updates none: no order change waits on
-- another's counter row. The totals are sums of the rows as before (src/orders/queries.ts orderCountQuery,
-- the book's total); src/orders/order-counts.ts folds each partner's and status's rows into one every few
-- seconds, so a sum reads few of them.
ALTER TABLE order_counts DROP CONSTRAINT order_counts_pkey;
-- Written only by the trigger, from orders rows whose partner_id is checked by their own foreign key: a
-- check here would lock the partner's row again for every change of every order.
ALTER TABLE order_counts DROP CONSTRAINT order_counts_partner_id_fkey;
ALTER TABLE order_counts DROP COLUMN shard;
WITH counted AS (DELETE FROM order_counts RETURNING partner_id, status, count)
INSERT INTO order_counts (partner_id, status, count)
SELECT partner_id, status, sum(count) FROM counted GROUP BY partner_id, status HAVING sum(count) <> 0;
CREATE INDEX order_counts_partner_status ON order_counts (partner_id, status) INCLUDE (count);

CREATE OR REPLACE FUNCTION count_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO order_counts (partner_id, status, count)
    SELECT partner_id, status, count(*) FROM new_orders GROUP BY partner_id, status;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO order_counts (partner_id, status, count)
    SELECT partner_id, status, -count(*) FROM old_orders GROUP BY partner_id, status;
  ELSE
    INSERT INTO order_counts (partner_id, status, count)
    SELECT change.partner_id, change.status, sum(change.delta)
    FROM (
      SELECT n.partner_id, n.status, 1 AS delta
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
      UNION ALL
      SELECT o.partner_id, o.status, -1
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
    ) AS change
    GROUP BY change.partner_id, change.status HAVING sum(change.delta) <> 0;
  END IF;
  RETURN NULL;
END;
$$;

-- Down Migration

CREATE OR REPLACE FUNCTION count_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT partner_id, status, abs(hashtext(id)) % 64, count(*) FROM new_orders GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT partner_id, status, abs(hashtext(id)) % 64, -count(*) FROM old_orders GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  ELSE
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT change.partner_id, change.status, change.shard, sum(change.delta)
    FROM (
      SELECT n.partner_id, n.status, abs(hashtext(n.id)) % 64 AS shard, 1 AS delta
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
      UNION ALL
      SELECT o.partner_id, o.status, abs(hashtext(o.id)) % 64, -1
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
    ) AS change
    GROUP BY 1, 2, 3 HAVING sum(change.delta) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  END IF;
  RETURN NULL;
END;
$$;
DROP INDEX order_counts_partner_status;
ALTER TABLE order_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE order_counts ALTER COLUMN shard DROP DEFAULT;
WITH counted AS (DELETE FROM order_counts RETURNING partner_id, status, count)
INSERT INTO order_counts (partner_id, status, shard, count)
SELECT partner_id, status, 0, sum(count) FROM counted GROUP BY partner_id, status;
ALTER TABLE order_counts ADD PRIMARY KEY (partner_id, status, shard);
ALTER TABLE order_counts ADD CONSTRAINT order_counts_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners (id);
