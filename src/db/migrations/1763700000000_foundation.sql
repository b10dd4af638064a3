-- Up Migration

CREATE TABLE partners (
  id              text PRIMARY KEY,
  name            text NOT NULL,
  tier            text NOT NULL CHECK (tier IN ('FREE', 'GROWTH', 'ENTERPRISE')),
  kyc_model       text NOT NULL CHECK (kyc_model IN ('PARTNER_MANAGED', 'SERVICE_PROVIDED')),
  status          text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'INACTIVE')),
  kyb_status      text NOT NULL DEFAULT 'APPROVED' CHECK (kyb_status IN ('APPROVED', 'SUSPENDED')),
  -- SHA-256 of the one active API key; the key itself is shown once and never stored.
  api_key_hash    bytea NOT NULL UNIQUE,
  api_key_prefix  text NOT NULL,
  -- Kept in clear because every delivery is signed with it (HMAC needs the key itself).
  webhook_secret  text NOT NULL,
  webhook_url     text,
  ip_allow_list   text[] NOT NULL DEFAULT '{}',
  fee_wallet      text,
  limits          jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id                text PRIMARY KEY,
  partner_id        text NOT NULL REFERENCES partners (id),
  partner_user_ref  text NOT NULL,
  email             text,
  kyc_status        text NOT NULL DEFAULT 'NOT_REQUIRED' CHECK (kyc_status IN ('NOT_REQUIRED', 'PENDING', 'APPROVED', 'REJECTED')),
  kyc_tier          text NOT NULL DEFAULT 'NONE' CHECK (kyc_tier IN ('NONE', 'BASIC', 'FULL')),
  kyc_completed_at  timestamptz,
  aml_risk_level    text CHECK (aml_risk_level IN ('LOW', 'MEDIUM', 'HIGH')),
  is_pep            boolean NOT NULL DEFAULT false,
  is_sanctioned     boolean NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (partner_id, partner_user_ref)
);

CREATE TABLE exchange_rates (
  id          bigserial PRIMARY KEY,
  usd_mxn     numeric(20, 6) NOT NULL CHECK (usd_mxn > 0),
  source      text NOT NULL CHECK (source IN ('central_bank', 'fallback_provider')),
  fetched_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exchange_rates_fetched_at ON exchange_rates (fetched_at DESC);

CREATE TABLE quotes (
  id               text PRIMARY KEY,
  partner_id       text NOT NULL REFERENCES partners (id),
  user_id          text NOT NULL REFERENCES users (id),
  amount_usdc      numeric(20, 6) NOT NULL CHECK (amount_usdc > 0),
  exchange_rate    numeric(20, 6) NOT NULL,
  rate_source      text NOT NULL,
  gross_mxn        numeric(20, 2) NOT NULL,
  fee_percent      numeric(5, 2) NOT NULL,
  fee_mxn          numeric(20, 2) NOT NULL,
  fee_recipient    text NOT NULL CHECK (fee_recipient IN ('USER', 'PARTNER', 'NONE')),
  net_mxn          numeric(20, 2) NOT NULL,
  expires_at       timestamptz NOT NULL,
  -- Set once, by the order that consumes the quote (single use).
  used_at          timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quotes_partner ON quotes (partner_id, created_at DESC);

-- Fixed one-minute windows per partner (or client address), shared by every instance.
CREATE UNLOGGED TABLE rate_limit_windows (
  bucket        text NOT NULL,
  window_start  timestamptz NOT NULL,
  count         integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

CREATE TABLE idempotency_keys (
  partner_id      text NOT NULL REFERENCES partners (id),
  key             text NOT NULL,
  request_hash    text NOT NULL,
  response_status integer,
  response_body   jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner_id, key)
);

-- Down Migration

DROP TABLE idempotency_keys;
DROP TABLE rate_limit_windows;
DROP TABLE quotes;
DROP TABLE exchange_rates;
DROP TABLE users;
DROP TABLE partners;
