-- Up Migration

-- A transaction stuck below the going fee is replaced by one with a higher fee under the same nonce
-- (decisions section 7): until one of them is mined any of them may be, so the hashes it replaced are
-- kept and looked up with the current one.
ALTER TABLE chain_transactions ADD COLUMN replaced_hashes text[] NOT NULL DEFAULT '{}';

-- Down Migration

ALTER TABLE chain_transactions DROP COLUMN replaced_hashes;
