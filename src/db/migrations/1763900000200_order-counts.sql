-- Up Migration

-- Issue 15: GET /orders answers `total` from counters kept in the same transaction as every order insert,
-- status change and delete, instead of counting the partner's rows on every page. Each order counts in
-- one of 8 shards (by its id) so concurrent orders of one partner rarely wait on the same row; a read
-- sums the shards. The triggers are per statement (a bulk insert is one upsert per partner, status and
-- shard) and write their rows in key order, so two transactions moving counts in opposite directions
-- (ACTIVE -> LOCKED, LOCKED -> ACTIVE) cannot deadlock.
CREATE TABLE order_counts (
  partner_id  text NOT NULL REFERENCES partners (id),
  status      text NOT NULL,
  shard       smallint NOT NULL,
  count       bigint NOT NULL,
  PRIMARY KEY (partner_id, status, shard)
);

CREATE FUNCTION count_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT partner_id, status, abs(hashtext(id)) % 8, count(*) FROM new_orders GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT partner_id, status, abs(hashtext(id)) % 8, -count(*) FROM old_orders GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  ELSE
    INSERT INTO order_counts (partner_id, status, shard, count)
    SELECT change.partner_id, change.status, change.shard, sum(change.delta)
    FROM (
      SELECT n.partner_id, n.status, abs(hashtext(n.id)) % 8 AS shard, 1 AS delta
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
      UNION ALL
      SELECT o.partner_id, o.status, abs(hashtext(o.id)) % 8, -1
        FROM new_orders n JOIN old_orders o USING (id) WHERE n.status <> o.status OR n.partner_id <> o.partner_id
    ) AS change
    GROUP BY 1, 2, 3 HAVING sum(change.delta) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (partner_id, status, shard) DO UPDATE SET count = order_counts.count + excluded.count;
  END IF;
  RETURN NULL;
END;
$$;

-- Backfill and triggers under one lock on orders: no order is counted twice or missed.
LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO order_counts (partner_id, status, shard, count)
SELECT partner_id, status, abs(hashtext(id)) % 8, count(*) FROM orders GROUP BY 1, 2, 3;
CREATE TRIGGER orders_counted_insert AFTER INSERT ON orders REFERENCING NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION count_orders();
CREATE TRIGGER orders_counted_update AFTER UPDATE ON orders REFERENCING OLD TABLE AS old_orders NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION count_orders();
CREATE TRIGGER orders_counted_delete AFTER DELETE ON orders REFERENCING OLD TABLE AS old_orders FOR EACH STATEMENT EXECUTE FUNCTION count_orders();

-- A partner user's orders are counted from the index alone (GET /orders?partnerUserRef=...), bounded by that user.
CREATE INDEX orders_user_status ON orders (user_id, status);

-- Down Migration

DROP INDEX orders_user_status;
DROP TRIGGER orders_counted_delete ON orders;
DROP TRIGGER orders_counted_update ON orders;
DROP TRIGGER orders_counted_insert ON orders;
DROP FUNCTION count_orders();
DROP TABLE order_counts;
