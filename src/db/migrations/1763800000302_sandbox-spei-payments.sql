-- Up Migration

-- The sandbox CEP portal simulator's SPEI payments, shared by every instance of the service on this
-- database: `POST /sandbox/orders/:id/pay` on one instance records the payment, and the portal of any
-- instance (where the verification job runs) finds it (src/sandbox/spei-payments.ts).
CREATE TABLE sandbox_spei_payments (
  tracking_key text PRIMARY KEY,
  reference    text NOT NULL,
  payment      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_spei_payments_tracking_key_upper ON sandbox_spei_payments (upper(tracking_key));
CREATE INDEX sandbox_spei_payments_reference ON sandbox_spei_payments (reference);

-- Down Migration

DROP TABLE sandbox_spei_payments;
