import { KycRequiredError } from "./errors.ts";
import { money } from "./money.ts";

export const KYC_LEVELS = ["BASIC", "FULL"] as const;
export type KycLevel = (typeof KYC_LEVELS)[number];
/** `kycTier` of a user: the highest level ever approved (decisions section 4). */
export type KycTierValue = "NONE" | KycLevel;

const TIER_RANK: Record<KycTierValue, number> = { NONE: 0, BASIC: 1, FULL: 2 };

/** Price of one billed KYC session, in USD, exact decimals (spec: BASIC 1.00 USD, FULL 2.50 USD). */
export const KYC_SESSION_PRICE_USD: Record<KycLevel, string> = { BASIC: "1.00", FULL: "2.50" };

/** Monthly volume (MXN) from which BASIC is required (inclusive). */
export const BASIC_THRESHOLD_MXN = "10000";
/** Monthly volume (MXN) above which FULL is required (exclusive). */
export const FULL_THRESHOLD_MXN = "50000";

/**
 * The KYC level a user needs before the next order, from their monthly volume before that order
 * (decisions section 4): at least 10,000 MXN requires BASIC, above 50,000 MXN requires FULL. So the order
 * that crosses a threshold is accepted (the volume before it was under) and the next one is checked.
 */
export function requiredKycLevel(monthlyVolumeBeforeMxn: string): KycLevel | null {
  const volume = money(monthlyVolumeBeforeMxn);
  if (volume.greaterThan(FULL_THRESHOLD_MXN)) return "FULL";
  if (volume.greaterThanOrEqualTo(BASIC_THRESHOLD_MXN)) return "BASIC";
  return null;
}

/** Whether a user's tier (highest level ever approved) covers a level. */
export function holdsKycLevel(kycTier: KycTierValue, level: KycLevel): boolean {
  return TIER_RANK[kycTier] >= TIER_RANK[level];
}

/**
 * Refuses the next order with KYC_REQUIRED (403) when the user's monthly volume before it requires a level
 * the user does not hold. Holding a level means having been approved for it (or above) at some time: a
 * PENDING or REJECTED status never unlocks anything, and never takes away a level already approved.
 * The rule is the same for both KYC models (attested and provider-verified levels count alike).
 */
export function assertKycAllowsOrder(user: { kycStatus: string; kycTier: KycTierValue }, monthlyVolumeBeforeMxn: string): void {
  const required = requiredKycLevel(monthlyVolumeBeforeMxn);
  if (required === null || holdsKycLevel(user.kycTier, required)) return;
  const state =
    user.kycStatus === "PENDING"
      ? "a KYC verification is pending"
      : user.kycStatus === "REJECTED"
        ? "the last KYC verification was rejected"
        : `the user holds ${user.kycTier === "NONE" ? "no KYC level" : user.kycTier}`;
  throw new KycRequiredError(`The user's monthly volume requires ${required} KYC and ${state}`);
}
