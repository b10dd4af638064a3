-- Up Migration

-- Issue 15: attempts run concurrently without a row lock held across the HTTP call. A worker claims a
-- delivery for its next attempt by writing its own id and a lease here (renewed while it holds the
-- delivery); a second job for the same attempt finds it claimed and waits, and a delivery whose worker
-- died (lease passed) is re-enqueued by the other workers' recovery pass.
ALTER TABLE webhook_deliveries ADD COLUMN claimed_by text, ADD COLUMN claimed_until timestamptz;
ALTER TABLE webhook_deliveries ADD CHECK ((claimed_by IS NULL) = (claimed_until IS NULL));
-- Only deliveries held right now are in it, so the lease renewal and the recovery pass stay cheap.
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_until) WHERE claimed_by IS NOT NULL;

-- Down Migration

DROP INDEX webhook_deliveries_claimed;
ALTER TABLE webhook_deliveries DROP COLUMN claimed_until, DROP COLUMN claimed_by;
