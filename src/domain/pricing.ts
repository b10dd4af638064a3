import { money, rawToUsdc, toCents, usdcToRaw, type Money } from "./money.ts";

export const FEE_RECIPIENTS = ["USER", "PARTNER", "NONE"] as const;
export type FeeRecipient = (typeof FEE_RECIPIENTS)[number];

export interface QuoteAmounts {
  grossAmountMxn: Money;
  feeAmountMxn: Money;
  netAmountMxn: Money;
}

/**
 * Decisions section 5: gross = amount x rate, fee = gross x feePercent / 100, net = gross - fee,
 * each rounded half-up to cents. The fee is taken from the rounded gross, so gross = fee + net exactly.
 */
export function priceQuote(amountUsdc: string, exchangeRate: string, feePercent: string): QuoteAmounts {
  const grossAmountMxn = toCents(money(amountUsdc).times(exchangeRate));
  const feeAmountMxn = toCents(grossAmountMxn.times(feePercent).dividedBy(100));
  return { grossAmountMxn, feeAmountMxn, netAmountMxn: grossAmountMxn.minus(feeAmountMxn) };
}

/** Basis points in a whole, as the escrow divides by (BPS_DENOMINATOR). */
const BPS = 10_000n;

/**
 * What the escrow releases to the buyer of an order (OfframpEscrow's payout): the amount less the
 * partner's fee, the fee computed in token units and rounded down (amount * feeBps / 10000), as the
 * contract does. `receive_amount` (migration 1764300000100) is the same arithmetic in SQL.
 */
export function buyerReceiveAmount(amountUsdc: string, feeBps: number): Money {
  const units = usdcToRaw(amountUsdc);
  return rawToUsdc(units - (units * BigInt(feeBps)) / BPS);
}
