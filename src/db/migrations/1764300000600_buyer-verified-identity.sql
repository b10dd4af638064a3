-- Up Migration

-- The identity the KYC provider verified for a buyer (decisions 8): the name, and at FULL the CURP and
-- the RFC. The CEP's ordering party is compared with it, so a payment from someone else's account is
-- held for review. Never logged (src/logger.ts), never shown to partners or other buyers.
ALTER TABLE buyers
  ADD COLUMN verified_name text,
  ADD COLUMN verified_curp text,
  ADD COLUMN verified_rfc  text,
  -- A KYC decision with a sanctions match (decisions 19): permits refused, open locks held for review.
  ADD COLUMN is_sanctioned boolean NOT NULL DEFAULT false;

-- Down Migration

ALTER TABLE buyers DROP COLUMN is_sanctioned, DROP COLUMN verified_rfc, DROP COLUMN verified_curp, DROP COLUMN verified_name;
