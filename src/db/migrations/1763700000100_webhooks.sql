-- Up Migration

-- The outbox: one row per order event, written in the same transaction as the state change that
-- causes it. `body` is the payload serialized once; every delivery attempt sends exactly these bytes.
CREATE TABLE webhook_events (
  id            text PRIMARY KEY,
  partner_id    text NOT NULL REFERENCES partners (id),
  order_id      text NOT NULL REFERENCES orders (id),
  -- Per order, from 1, in state order (decisions section 9).
  sequence      integer NOT NULL CHECK (sequence > 0),
  event_type    text NOT NULL CHECK (event_type ~ '^order\.[a-z_]+$'),
  order_status  text NOT NULL,
  body          text NOT NULL,
  occurred_at   timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (order_id, sequence)
);
CREATE INDEX webhook_events_partner ON webhook_events (partner_id, created_at DESC);

-- The last sequence handed out per order. Taken with INSERT .. ON CONFLICT DO UPDATE, whose row lock
-- serializes concurrent events of one order until commit, whatever locks the caller holds.
CREATE TABLE webhook_order_sequences (
  order_id       text PRIMARY KEY REFERENCES orders (id),
  last_sequence  integer NOT NULL CHECK (last_sequence > 0)
);

-- One delivery per event sent to a partner webhook URL: the spec's "Webhook delivery record".
CREATE TABLE webhook_deliveries (
  id                  text PRIMARY KEY,
  event_id            text NOT NULL UNIQUE REFERENCES webhook_events (id),
  partner_id          text NOT NULL REFERENCES partners (id),
  order_id            text NOT NULL REFERENCES orders (id),
  sequence            integer NOT NULL,
  event_type          text NOT NULL,
  status              text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts        integer NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
  -- Attempt series: 1, then one more per operator redelivery. A job for an older series is stale.
  series              integer NOT NULL DEFAULT 1 CHECK (series > 0),
  last_attempt_at     timestamptz,
  next_attempt_at     timestamptz,
  delivered_at        timestamptz,
  error_message       text,
  -- When the very first attempt (of any series) finished: later events of the order wait for it.
  first_attempted_at  timestamptz,
  -- Last time the stalled-delivery sweep re-enqueued this delivery.
  swept_at            timestamptz,
  created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK (attempts <= max_attempts),
  CHECK ((status = 'PENDING') = (next_attempt_at IS NOT NULL)),
  CHECK ((status = 'DELIVERED') = (delivered_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_partner ON webhook_deliveries (partner_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (order_id, sequence);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';

-- Every attempt made, for operators (the delivery record keeps only the latest).
CREATE TABLE webhook_delivery_attempts (
  delivery_id      text NOT NULL REFERENCES webhook_deliveries (id),
  series           integer NOT NULL,
  attempt          integer NOT NULL,
  started_at       timestamptz NOT NULL,
  finished_at      timestamptz NOT NULL,
  url              text,
  response_status  integer,
  error_message    text,
  PRIMARY KEY (delivery_id, series, attempt)
);

-- Down Migration

DROP TABLE webhook_delivery_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_order_sequences;
DROP TABLE webhook_events;
