import { money, toCents, type Money } from "./money.ts";

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
