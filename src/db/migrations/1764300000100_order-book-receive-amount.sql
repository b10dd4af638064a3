-- Up Migration

-- The order book sorts by what the buyer pays per token it receives (decisions 17): totalMxn over the
-- amount the escrow releases to the buyer, which is the amount less the partner's fee, the fee in token
-- units (6 decimals) rounded down as OfframpEscrow computes it. One function serves the index and the
-- query (src/market/order-book.ts), so they cannot drift; buyerReceiveAmount (src/domain/pricing.ts) is
-- the same arithmetic in TypeScript.
CREATE FUNCTION receive_amount(amount_usdc numeric, fee_bps integer) RETURNS numeric
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN amount_usdc - floor(amount_usdc * 1000000 * fee_bps / 10000) / 1000000;

DROP INDEX orders_book;
CREATE INDEX orders_book ON orders ((total_mxn / receive_amount(amount_usdc, fee_bps)), id)
  INCLUDE (expires_at, amount_usdc, bank_code) WHERE status = 'ACTIVE';

-- Down Migration

DROP INDEX orders_book;
CREATE INDEX orders_book ON orders ((total_mxn / amount_usdc), id) INCLUDE (expires_at, amount_usdc, bank_code) WHERE status = 'ACTIVE';
DROP FUNCTION receive_amount(numeric, integer);
