-- Up Migration

-- A reorganisation deeper than CHAIN_CONFIRMATIONS can remove an event the service already acted on
-- (decisions sections 6, 7). The consumer keeps where each applied event was, so it can find those no
-- longer in the indexer's canonical rows, and the block hash of its cursor's event, to notice the reorg.
ALTER TABLE chain_cursor ADD COLUMN block_hash text;
ALTER TABLE applied_chain_events
  ADD COLUMN indexer_schema   text,
  ADD COLUMN block_number     bigint,
  ADD COLUMN event_name       text,
  ADD COLUMN transaction_hash text,
  -- Set when the event was found gone from the canonical chain (reported once).
  ADD COLUMN orphaned_at      timestamptz;
CREATE INDEX applied_chain_events_recent ON applied_chain_events (indexer_schema, block_number) WHERE orphaned_at IS NULL;

-- Down Migration

DROP INDEX applied_chain_events_recent;
ALTER TABLE applied_chain_events DROP COLUMN indexer_schema, DROP COLUMN block_number, DROP COLUMN event_name, DROP COLUMN transaction_hash, DROP COLUMN orphaned_at;
ALTER TABLE chain_cursor DROP COLUMN block_hash;
