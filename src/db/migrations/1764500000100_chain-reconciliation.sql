-- Up Migration

-- Where the reconciliation with the chain stands, per indexer schema (src/sync/escrow-reconciliation.ts):
-- the escrow's logs are read up to `reconciled_to`; `seen_block` is the final-enough block at `seen_at`,
-- read up to only once a whole interval has passed since (every log then had that long to arrive through
-- the indexer). Kept here, not in memory, so instances that restart often still move it on.
CREATE TABLE chain_reconciliation (
  indexer_schema text PRIMARY KEY,
  reconciled_to  bigint NOT NULL,
  seen_block     bigint NOT NULL,
  seen_at        timestamptz NOT NULL
);

-- Down Migration

DROP TABLE chain_reconciliation;
