-- Up Migration

CREATE TABLE orders (
  id                  text PRIMARY KEY,
  partner_id          text NOT NULL REFERENCES partners (id),
  user_id             text NOT NULL REFERENCES users (id),
  -- A quote is consumed by exactly one order, even under concurrent POST /orders.
  quote_id            text NOT NULL UNIQUE REFERENCES quotes (id),
  escrow_order_id     text NOT NULL UNIQUE,
  status              text NOT NULL CHECK (status IN ('PENDING_DEPOSIT', 'ACTIVE', 'LOCKED', 'PENDING_RELEASE', 'COMPLETED', 'EXPIRED', 'REFUNDED', 'DISPUTED')),
  token               text NOT NULL,
  amount_usdc         numeric(20, 6) NOT NULL,
  amount_raw          numeric(78, 0) NOT NULL,
  total_mxn           numeric(20, 2) NOT NULL,
  exchange_rate       numeric(20, 6) NOT NULL,
  fee_percent         numeric(5, 2) NOT NULL,
  fee_recipient       text NOT NULL,
  seller_clabe        text NOT NULL,
  bank_code           text NOT NULL,
  aml_risk_score      integer NOT NULL CHECK (aml_risk_score BETWEEN 0 AND 100),
  aml_risk_level      text NOT NULL CHECK (aml_risk_level IN ('LOW', 'MEDIUM', 'HIGH')),
  expires_at          timestamptz NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_partner_created ON orders (partner_id, created_at DESC, id DESC);
CREATE INDEX orders_user_created ON orders (user_id, created_at DESC);
CREATE INDEX orders_status ON orders (status);

-- Down Migration

DROP TABLE orders;
