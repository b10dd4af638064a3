-- Up Migration

-- No statement reads a partner's quotes in order. The index cost every quote an insert, and a session that
-- planned the order's lock of its quote (`id` and `partner_id`) while the table was still empty kept a plan
-- through it: every later order read all of its partner's quotes (docs/benchmarks.md, stop 58).
DROP INDEX quotes_partner;

-- Down Migration

CREATE INDEX quotes_partner ON quotes (partner_id, created_at DESC);
