-- Up Migration

-- The buyer market (decisions 17): buyers are wallets that signed in with EIP-4361. Wallets are stored
-- lower-case (hex values: compared without letter case).
CREATE TABLE buyers (
  wallet            text PRIMARY KEY CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  kyc_status        text NOT NULL DEFAULT 'NOT_REQUIRED' CHECK (kyc_status IN ('NOT_REQUIRED', 'PENDING', 'APPROVED', 'REJECTED')),
  kyc_tier          text NOT NULL DEFAULT 'NONE' CHECK (kyc_tier IN ('NONE', 'BASIC', 'FULL')),
  kyc_completed_at  timestamptz,
  is_pep            boolean NOT NULL DEFAULT false,
  -- An operator's suspension (PATCH /admin/v1/buyers/:wallet { status: SUSPENDED }) lasts until this time.
  suspended_until   timestamptz,
  -- An operator's reinstatement: lock expiries before it no longer count (nor suspend).
  reinstated_at     timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX buyers_created ON buyers (created_at DESC, wallet);

-- Sign-in challenges: each nonce is issued for one wallet and one message, used once, within 5 minutes.
CREATE TABLE market_nonces (
  nonce         text PRIMARY KEY,
  wallet        text NOT NULL,
  -- SHA-256 of the exact message issued: a session is opened only with that message.
  message_hash  text NOT NULL,
  expires_at    timestamptz NOT NULL,
  used_at       timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX market_nonces_expires ON market_nonces (expires_at);

-- Buyer sessions: only the SHA-256 of the bearer token is stored.
CREATE TABLE market_sessions (
  token_hash  text PRIMARY KEY,
  wallet      text NOT NULL REFERENCES buyers (wallet),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX market_sessions_wallet ON market_sessions (wallet);
CREATE INDEX market_sessions_expires ON market_sessions (expires_at);

-- Buyers' KYC sessions at the same provider as partners' users (decisions 4), billed to no partner.
CREATE TABLE buyer_kyc_sessions (
  id                   text PRIMARY KEY,
  wallet               text NOT NULL REFERENCES buyers (wallet),
  level                text NOT NULL CHECK (level IN ('BASIC', 'FULL')),
  status               text NOT NULL CHECK (status IN ('CREATING', 'FAILED', 'PENDING', 'APPROVED', 'REJECTED')),
  provider_session_id  text UNIQUE,
  session_url          text,
  return_url           text NOT NULL,
  failure              text,
  is_pep               boolean NOT NULL DEFAULT false,
  is_sanctioned        boolean NOT NULL DEFAULT false,
  decision_reason      text,
  decided_at           timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX buyer_kyc_sessions_wallet ON buyer_kyc_sessions (wallet, created_at DESC);

-- Lock permits issued: until its deadline a permit counts against the buyer's open-lock limit, so a
-- buyer cannot collect more permits than locks it may hold.
CREATE TABLE lock_permits (
  id          bigserial PRIMARY KEY,
  order_id    text NOT NULL REFERENCES orders (id),
  wallet      text NOT NULL,
  deadline    timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lock_permits_wallet ON lock_permits (wallet, deadline);

-- The payment concept (OFR + 7 digits) the buyer writes in the SPEI transfer, unique among open
-- orders: a sequence scrambled by an affine map modulo 10^7 (a bijection), so concepts do not repeat
-- before 10 million orders and do not reveal the order count.
CREATE SEQUENCE payment_concept_seq;
ALTER TABLE orders ADD COLUMN payment_concept text NOT NULL
  DEFAULT ('OFR' || lpad((((nextval('payment_concept_seq') % 10000000) * 7654321 + 1234567) % 10000000)::text, 7, '0'));
CREATE UNIQUE INDEX orders_open_payment_concept ON orders (payment_concept)
  WHERE status IN ('PENDING_DEPOSIT', 'ACTIVE', 'LOCKED', 'DISPUTED', 'PENDING_RELEASE');

-- The order book: ACTIVE orders, cheapest price per unit first.
CREATE INDEX orders_book ON orders ((total_mxn / amount_usdc), id) INCLUDE (expires_at, amount_usdc, bank_code) WHERE status = 'ACTIVE';
-- A buyer's trades, newest lock first.
CREATE INDEX orders_buyer_locked ON orders (lower(buyer_wallet), locked_at DESC, id DESC) WHERE buyer_wallet IS NOT NULL;

-- Down Migration

DROP INDEX orders_buyer_locked;
DROP INDEX orders_book;
DROP INDEX orders_open_payment_concept;
ALTER TABLE orders DROP COLUMN payment_concept;
DROP SEQUENCE payment_concept_seq;
DROP TABLE lock_permits;
DROP TABLE buyer_kyc_sessions;
DROP TABLE market_sessions;
DROP TABLE market_nonces;
DROP TABLE buyers;
