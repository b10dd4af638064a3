-- Up Migration

-- The transaction sender asks whether an order has an escrow event a reorganisation removed and the chain
-- has not mined again (src/chain/transaction-sender.ts): the order's applied events, found by order.
CREATE INDEX applied_chain_events_order ON applied_chain_events (order_id);

-- Down Migration

DROP INDEX applied_chain_events_order;
