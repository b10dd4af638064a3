-- Up Migration

CREATE TABLE orders (
  id                    text PRIMARY KEY,
  partner_id            text NOT NULL REFERENCES partners (id),
  user_id               text NOT NULL REFERENCES users (id),
  -- A quote is consumed by exactly one order, even under concurrent POST /orders.
  quote_id              text NOT NULL UNIQUE REFERENCES quotes (id),
  escrow_order_id       text NOT NULL UNIQUE,
  token                 text NOT NULL,
  amount_usdc           numeric(20, 6) NOT NULL,
  amount_raw            numeric(78, 0) NOT NULL,
  total_mxn             numeric(20, 2) NOT NULL,
  exchange_rate         numeric(20, 6) NOT NULL,
  fee_percent           numeric(5, 2) NOT NULL,
  fee_recipient         text NOT NULL,
  fee_bps               integer NOT NULL,
  fee_recipient_address text NOT NULL,
  treasury_share_bps    integer NOT NULL,
  seller_clabe          text NOT NULL,
  bank_code             text NOT NULL,
  deposit_deadline      timestamptz NOT NULL,
  deposit_signature     text NOT NULL,
  aml_risk_score        integer NOT NULL CHECK (aml_risk_score BETWEEN 0 AND 100),
  aml_risk_level        text NOT NULL CHECK (aml_risk_level IN ('LOW', 'MEDIUM', 'HIGH')),
  -- The order actor: its XState snapshot and a version bumped by every transition. The columns below
  -- are the snapshot's context, denormalized for queries; only the actor store writes them.
  machine_snapshot      jsonb NOT NULL,
  version               integer NOT NULL DEFAULT 1,
  status                text NOT NULL CHECK (status IN ('PENDING_DEPOSIT', 'ACTIVE', 'LOCKED', 'PENDING_RELEASE', 'COMPLETED', 'EXPIRED', 'REFUNDED', 'DISPUTED')),
  expires_at            timestamptz NOT NULL,
  escrow_tx_hash        text,
  seller_wallet         text,
  buyer_wallet          text,
  locked_at             timestamptz,
  lock_expires_at       timestamptz,
  cep_tracking_key      text,
  -- A CEP settles one order, ever.
  cep_hash              text UNIQUE,
  cep_validated_at      timestamptz,
  release_tx_hash       text,
  refund_tx_hash        text,
  completed_at          timestamptz,
  dispute_opened_by     text,
  dispute_outcome       text,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_partner_created ON orders (partner_id, created_at DESC, id DESC);
CREATE INDEX orders_partner_status_created ON orders (partner_id, status, created_at DESC, id DESC);
CREATE INDEX orders_user_created ON orders (user_id, created_at DESC);
CREATE INDEX orders_status ON orders (status);

CREATE TABLE order_timeline (
  seq         bigserial PRIMARY KEY,
  id          text NOT NULL UNIQUE,
  order_id    text NOT NULL REFERENCES orders (id),
  event       text NOT NULL,
  data        jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_timeline_order ON order_timeline (order_id, seq);

-- Escrow events already applied to an order: the same event twice changes nothing.
CREATE TABLE applied_chain_events (
  event_id    text PRIMARY KEY,
  order_id    text,
  applied_at  timestamptz NOT NULL DEFAULT now()
);

-- Where the consumer of the indexer's events stands, in chain order.
CREATE TABLE chain_cursor (
  name          text PRIMARY KEY,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Every transaction the service signs is stored before it is broadcast, so after a crash the same
-- signed bytes are looked up on chain and rebroadcast, never signed twice (decisions: sent once).
CREATE TABLE chain_transactions (
  id            text PRIMARY KEY,
  order_id      text NOT NULL REFERENCES orders (id),
  action        text NOT NULL,
  params        jsonb NOT NULL DEFAULT '{}',
  request_key   text NOT NULL UNIQUE,
  signer        text NOT NULL,
  nonce         bigint,
  tx_hash       text,
  raw_tx        text,
  status        text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'MINED', 'REVERTED', 'SKIPPED')),
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chain_transactions_order ON chain_transactions (order_id);

-- Down Migration

DROP TABLE chain_transactions;
DROP TABLE chain_cursor;
DROP TABLE applied_chain_events;
DROP TABLE order_timeline;
DROP TABLE orders;
