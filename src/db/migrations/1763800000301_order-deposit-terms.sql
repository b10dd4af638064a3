-- Up Migration

-- The deposit terms the service signed for the order (EIP-712 OrderTerms; integers as decimal strings),
-- kept when they are signed so the order shows and uses exactly those, whatever the configuration is
-- later (src/orders/terms.ts). NULL for orders created before: they are shown as they always were.
ALTER TABLE orders ADD COLUMN deposit_terms jsonb;

-- Down Migration

ALTER TABLE orders DROP COLUMN deposit_terms;
