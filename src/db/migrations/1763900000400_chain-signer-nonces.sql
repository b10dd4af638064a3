-- Up Migration

-- The service signs many transactions without waiting for each receipt (issue 15), so a signer's nonces
-- are handed out here rather than read from the node: taking the next one locks this row in the same
-- transaction that stores the signed bytes, so one action has one nonce and one stored transaction, and
-- instances on one database never sign the same nonce. The counter only moves forward; a chain ahead of
-- it (a transaction sent by something else) moves it on.
CREATE TABLE chain_signers (
  address     text PRIMARY KEY CHECK (address ~ '^0x[0-9a-f]{40}$'),
  next_nonce  bigint NOT NULL CHECK (next_nonce >= 0),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Who signed a stored transaction: a dropped one is rebroadcast in its signer's nonce order.
ALTER TABLE chain_transactions ADD COLUMN from_address text;
CREATE UNIQUE INDEX chain_transactions_signer_nonce ON chain_transactions (from_address, nonce) WHERE from_address IS NOT NULL;

-- Down Migration

DROP INDEX chain_transactions_signer_nonce;
ALTER TABLE chain_transactions DROP COLUMN from_address;
DROP TABLE chain_signers;
