-- Up Migration

-- Decisions 5: a partner without a fee wallet may still charge a PARTNER fee. Its order's signed terms name
-- the service treasury as the fee recipient, so the whole fee is credited to the treasury at release, and
-- the partner's part (the fee less the service's revenue share) is owed to the partner, settled off-chain.
-- True for such orders; the admin revenue report and the partner dashboard show it as owedToPartnerUsdc.
ALTER TABLE orders ADD COLUMN partner_fee_owed boolean NOT NULL DEFAULT false;

-- Down Migration

ALTER TABLE orders DROP COLUMN partner_fee_owed;
