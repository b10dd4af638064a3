-- Up Migration

-- Issue 24: the book's total was a count of every ACTIVE order, each read from the heap to test the
-- deposit hold in its snapshot (755 ms at 30,000 listings). Now:
-- - orders_book leaves held deposits out in its predicate, so the page and a filtered count read the
--   index alone (expires_at, amount_usdc and bank_code are included);
-- - the unfiltered total is the ACTIVE count kept in order_counts less the ACTIVE orders not listed,
--   which are few and each found through its own small index: a listing past its end whose timer has
--   not run yet (orders_active_expiry), a held deposit (orders_active_held). orders_active_expiry is on
--   an expression so that its statistics are its own: on expires_at the planner reads the whole table's
--   (mostly past) and expects most ACTIVE orders to have ended, then prefers walking all of them.
-- The predicates repeat DEPOSIT_HELD (src/orders/queries.ts) word for word: the planner matches a
-- query's condition to an index's predicate by its expression.
DROP INDEX orders_book;
CREATE INDEX orders_book ON orders ((total_mxn / receive_amount(amount_usdc, fee_bps)), id)
  INCLUDE (expires_at, amount_usdc, bank_code)
  WHERE status = 'ACTIVE'
    AND NOT (machine_snapshot #>> '{context,depositHold,sellerWallet}' IS NOT NULL AND machine_snapshot #>> '{context,depositHold,decision}' IS DISTINCT FROM 'RELEASE');
CREATE INDEX orders_active_expiry ON orders ((CASE WHEN status = 'ACTIVE' THEN expires_at END)) WHERE status = 'ACTIVE';
CREATE INDEX orders_active_held ON orders (expires_at)
  WHERE status = 'ACTIVE'
    AND (machine_snapshot #>> '{context,depositHold,sellerWallet}' IS NOT NULL AND machine_snapshot #>> '{context,depositHold,decision}' IS DISTINCT FROM 'RELEASE');

-- Down Migration

DROP INDEX orders_active_held;
DROP INDEX orders_active_expiry;
DROP INDEX orders_book;
CREATE INDEX orders_book ON orders ((total_mxn / receive_amount(amount_usdc, fee_bps)), id)
  INCLUDE (expires_at, amount_usdc, bank_code) WHERE status = 'ACTIVE';
