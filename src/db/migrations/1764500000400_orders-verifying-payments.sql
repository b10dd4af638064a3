-- Up Migration

-- At start, the payment verification worker looks for the LOCKED orders whose payment reports are being
-- verified (src/workers/payment-verification.ts, ORDERS_VERIFYING_PAYMENTS): without this index it read
-- the snapshot of every LOCKED order, 33-56 ms of every start with a million orders stored (figure 10 of
-- the bench, 20,000 of them LOCKED). The predicate is that statement's, word for word.
CREATE INDEX orders_verifying_payments ON orders (id)
  WHERE status = 'LOCKED' AND jsonb_array_length(coalesce(machine_snapshot->'context'->'verifyingPayments', '[]'::jsonb)) > 0;

-- Down Migration

DROP INDEX orders_verifying_payments;
