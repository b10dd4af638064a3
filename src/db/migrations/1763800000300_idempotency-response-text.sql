-- Up Migration

-- Decisions section 11: a replay returns the first response byte for byte. A JSONB column keeps neither
-- the key order nor the spelling of the body (it sorts keys by length), so the body is kept as the exact
-- text sent. Rows written before keep their response_body and are replayed from it until they expire.
ALTER TABLE idempotency_keys ADD COLUMN response_text text;

-- Down Migration

ALTER TABLE idempotency_keys DROP COLUMN response_text;
