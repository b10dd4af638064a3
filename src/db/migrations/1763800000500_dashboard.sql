-- Up Migration

-- Partner dashboard (decisions section 18): a partner's members, their sessions, sign-in throttling and
-- the audit log of every change to a partner.

-- A member belongs to one partner; emails are unique across the service (compared lower-cased). A member
-- whose invitation is not yet accepted has no password (status INVITED). Only a SHA-256 of the
-- invitation token is kept, and the token is spent when accepted.
CREATE TABLE dashboard_members (
  id                  text PRIMARY KEY,
  partner_id          text NOT NULL REFERENCES partners (id),
  email               text NOT NULL,
  role                text NOT NULL CHECK (role IN ('OWNER', 'DEVELOPER', 'VIEWER')),
  -- scrypt, self-describing: scrypt$N$r$p$salt$hash (base64url)
  password_hash       text,
  invite_token_hash   bytea UNIQUE,
  invite_expires_at   timestamptz,
  accepted_at         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dashboard_members_email ON dashboard_members (lower(email));
CREATE INDEX dashboard_members_partner ON dashboard_members (partner_id, created_at);

-- Only a SHA-256 of the session token (the cookie's value) is kept. Removing a member ends its sessions.
CREATE TABLE dashboard_sessions (
  token_hash   bytea PRIMARY KEY,
  member_id    text NOT NULL REFERENCES dashboard_members (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_member ON dashboard_sessions (member_id);

-- Failed sign-ins (and invitation acceptances) in fixed 15-minute windows, per email and per address.
CREATE TABLE dashboard_auth_failures (
  bucket        text NOT NULL,
  window_start  timestamptz NOT NULL,
  count         integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

-- Every change to a partner, by its members (dashboard) or by operators (admin API): what, who, when,
-- from which address. `details` never holds a key or a secret.
CREATE TABLE partner_audit_log (
  id           text PRIMARY KEY,
  partner_id   text NOT NULL REFERENCES partners (id),
  action       text NOT NULL,
  actor_type   text NOT NULL CHECK (actor_type IN ('MEMBER', 'OPERATOR')),
  actor_id     text NOT NULL,
  actor_email  text,
  address      text,
  details      jsonb NOT NULL DEFAULT '{}',
  at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX partner_audit_log_partner ON partner_audit_log (partner_id, at DESC, id DESC);

-- Down Migration

DROP TABLE partner_audit_log;
DROP TABLE dashboard_auth_failures;
DROP TABLE dashboard_sessions;
DROP TABLE dashboard_members;
