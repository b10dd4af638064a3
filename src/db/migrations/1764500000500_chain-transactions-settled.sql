-- Up Migration

-- The reconciliation looks again at our transactions settled MINED in the last few intervals whose event
-- is still not applied (src/sync/escrow-reconciliation.ts `resendRemoved`): found by when they settled.
CREATE INDEX chain_transactions_settled ON chain_transactions (updated_at) WHERE status = 'MINED';

-- Down Migration

DROP INDEX chain_transactions_settled;
