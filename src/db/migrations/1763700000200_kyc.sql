-- Up Migration

-- One row per KYC session a partner starts (POST /users/:ref/kyc). The row is reserved (CREATING) under a
-- per-partner lock before the provider is called, so concurrent starts cannot pass the monthly cap; it
-- becomes PENDING when the provider created the session, or FAILED when it did not (never counted or billed).
-- Whether it is billed and its price are fixed when it becomes PENDING: the partner's first
-- `kycIncludedPerMonth` sessions of the month are free, each later one costs the level's price.
CREATE TABLE kyc_sessions (
  id                   text PRIMARY KEY,
  partner_id           text NOT NULL REFERENCES partners (id),
  user_id              text NOT NULL REFERENCES users (id),
  level                text NOT NULL CHECK (level IN ('BASIC', 'FULL')),
  status               text NOT NULL CHECK (status IN ('CREATING', 'FAILED', 'PENDING', 'APPROVED', 'REJECTED')),
  -- Billing month: the calendar month in America/Mexico_City when the session was started, 'YYYY-MM'.
  period_month         text NOT NULL CHECK (period_month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
  provider_session_id  text UNIQUE,
  session_url          text,
  return_url           text NOT NULL,
  billed               boolean NOT NULL DEFAULT false,
  price_usd            numeric(10, 2) NOT NULL DEFAULT 0 CHECK (price_usd >= 0),
  failure              text,
  -- Screening flags the provider reported for this session (they are also raised on the user).
  is_pep               boolean NOT NULL DEFAULT false,
  is_sanctioned        boolean NOT NULL DEFAULT false,
  decision_reason      text,
  decided_at           timestamptz,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CHECK (status IN ('CREATING', 'FAILED') OR provider_session_id IS NOT NULL)
);
CREATE INDEX kyc_sessions_partner_month ON kyc_sessions (partner_id, period_month, created_at);
CREATE INDEX kyc_sessions_user ON kyc_sessions (user_id, created_at DESC);

-- Down Migration

DROP TABLE kyc_sessions;
