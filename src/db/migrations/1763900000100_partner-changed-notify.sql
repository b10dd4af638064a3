-- Up Migration

-- Issue 15: partners are cached in memory by API key hash (src/partners/credential-cache.ts). Every change
-- to a partner's row (key rotation, status, KYB, allow-list, limits, tier...) notifies the instances in the
-- changing transaction, whoever the writer is (admin API, dashboard, CLI, psql); a notification is
-- delivered at commit, never for a rolled-back change.
CREATE FUNCTION notify_partner_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('partner_changed', OLD.id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER partners_changed AFTER UPDATE OR DELETE ON partners FOR EACH ROW EXECUTE FUNCTION notify_partner_changed();

-- Down Migration

DROP TRIGGER partners_changed ON partners;
DROP FUNCTION notify_partner_changed();
