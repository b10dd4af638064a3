-- Up Migration

-- Webhook deliveries are attempted by pg-boss jobs again, the stack's choice for timers and webhook retries
-- (the guide): 1764700000100 made the delivery rows a queue of their own, claimed and retried by hand-written
-- code. Its index, trigger and dropped sweep mark are undone; the rows it wrote pending without a job are
-- found by the stalled-delivery sweep (workers/webhook-deliveries.ts), which queues their jobs.
DROP TRIGGER webhook_delivery_due_notify ON webhook_deliveries;
DROP FUNCTION notify_webhook_delivery_due();
ALTER TABLE webhook_deliveries ADD COLUMN swept_at timestamptz;
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';

-- Down Migration

DROP INDEX webhook_deliveries_pending;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING' AND claimed_by IS NULL;
ALTER TABLE webhook_deliveries DROP COLUMN swept_at;
CREATE FUNCTION notify_webhook_delivery_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_delivery_due', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_delivery_due_notify AFTER INSERT OR UPDATE OF series ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.status = 'PENDING') EXECUTE FUNCTION notify_webhook_delivery_due();
