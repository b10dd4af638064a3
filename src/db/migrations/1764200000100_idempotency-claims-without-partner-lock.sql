-- Up Migration

-- An Idempotency-Key's claim is now an uncommitted row, held open for the whole request, so that it dies
-- with the process that holds it (a SIGKILL mid-request used to leave the key "still being processed"
-- for 24 hours). The foreign key's check would hold a KEY SHARE lock on the partner's row for that whole
-- time, across a connection PostgreSQL cannot see waiting on the request's other connections: any
-- statement that needs a stronger lock on the partner would then wait on a request that may be waiting on
-- it. Partners are never deleted, so the constraint guarded nothing a request could break.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_partner_id_fkey;

-- Down Migration

ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners (id);
