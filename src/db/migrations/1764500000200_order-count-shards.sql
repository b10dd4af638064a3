-- Up Migration

-- Issue 24: a state change of an order upserts its partner's counter rows for the old and the new status,
-- and holds them until its transaction commits. With 8 shards, the orders of one busy partner met on them:
-- sampled every 200 ms under figure 9's load (40 trades in flight, two instances), 0.7 backends on average
-- waited for another transaction's counter row (the transition's UPDATE and the order's INSERT, waiting
-- on a transaction id). 64 shards make two concurrent orders' rows meet an eighth as often; a read sums 64
-- rows per status instead of 8. Existing rows stay valid: only sums are read, so an order counted in one
-- shard and moved out of another leaves the sums right.
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

-- Down Migration

CREATE OR REPLACE FUNCTION count_orders() RETURNS trigger LANGUAGE plpgsql AS $$
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
