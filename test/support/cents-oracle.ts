// An independent oracle for quote arithmetic (decisions section 5), in BigInt integers only: no float,
// no decimal library. Amounts are micro-USDC, rates millionths of a peso, fees hundredths of a percent.

/** "17.25" at scale 6 -> 17250000n. Accepts plain decimal text only. */
export function scaled(text: string, scale: number): bigint {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new Error(`not a plain decimal: ${text}`);
  const fraction = match[2] ?? "";
  if (fraction.length > scale) throw new Error(`${text} has more than ${scale} decimals`);
  return BigInt(match[1]! + fraction.padEnd(scale, "0"));
}

/** n / d rounded half-up, for n >= 0 and d > 0. */
export function divideHalfUp(n: bigint, d: bigint): bigint {
  return (2n * n + d) / (2n * d);
}

/** 12345n -> "123.45" */
export function formatCents(cents: bigint): string {
  return `${cents / 100n}.${String(cents % 100n).padStart(2, "0")}`;
}

export interface OracleQuote {
  grossCents: bigint;
  feeCents: bigint;
  netCents: bigint;
}

/**
 * gross = round_half_up(amount x rate, 2); fee = round_half_up(gross x feePercent / 100, 2); net = gross - fee.
 * amount x rate has 12 decimals, so cents are that product / 10^10; gross cents x fee hundredths is 10^4 too big.
 */
export function oracleQuote(amountUsdc: string, rate: string, feePercent: string): OracleQuote {
  const grossCents = divideHalfUp(scaled(amountUsdc, 6) * scaled(rate, 6), 10n ** 10n);
  const feeCents = divideHalfUp(grossCents * scaled(feePercent, 2), 10_000n);
  return { grossCents, feeCents, netCents: grossCents - feeCents };
}

/** Decimal text of an integer count of 10^-scale units, without trailing zeros: 1500000n at 6 -> "1.5". */
export function plainDecimal(units: bigint, scale: number, keepScale = false): string {
  const base = 10n ** BigInt(scale);
  const fraction = String(units % base).padStart(scale, "0");
  const shown = keepScale ? fraction : fraction.replace(/0+$/, "");
  return shown ? `${units / base}.${shown}` : `${units / base}`;
}
