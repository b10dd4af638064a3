-- Up Migration

-- Issue 24: the delivery rows are the delivery queue. A worker claims due rows itself (claimed_by,
-- claimed_until) instead of one pg-boss job per attempt: a transition writes its deliveries and nothing
-- else, and no job can go missing beside its row, so the stalled-delivery sweep and its swept_at go.
DROP INDEX webhook_deliveries_pending;
-- Only what a claim can take: pending and held by no worker, oldest due first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING' AND claimed_by IS NULL;
ALTER TABLE webhook_deliveries DROP COLUMN swept_at;

-- A delivery written due (a new event's, or an operator's redelivery) wakes the workers at commit; a retry
-- falling due later is found by their poll.
CREATE FUNCTION notify_webhook_delivery_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_delivery_due', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER webhook_delivery_due_notify AFTER INSERT OR UPDATE OF series ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.status = 'PENDING') EXECUTE FUNCTION notify_webhook_delivery_due();

-- Down Migration

DROP TRIGGER webhook_delivery_due_notify ON webhook_deliveries;
DROP FUNCTION notify_webhook_delivery_due();
ALTER TABLE webhook_deliveries ADD COLUMN swept_at timestamptz;
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
