// Tier limits (decisions section 3). `null` means unlimited. ENTERPRISE values are per-partner overrides.

export const TIERS = ["FREE", "GROWTH", "ENTERPRISE"] as const;
export type Tier = (typeof TIERS)[number];

export interface TierLimits {
  requestsPerMinute: number;
  maxUsers: number | null;
  monthlyVolumeMxn: string | null;
  dailyVolumeMxn: string | null;
  kycIncludedPerMonth: number;
  kycCapPerMonth: number | null;
  /** The service's share of the partner's collected fees, in percent. */
  revenueSharePercent: string;
}

/** What an ENTERPRISE partner's `limits` may override (admin API `limits`). */
export interface LimitOverrides {
  requestsPerMinute?: number;
  maxUsers?: number | null;
  monthlyVolumeMxn?: number | null;
  dailyVolumeMxn?: number | null;
  kycIncludedPerMonth?: number;
  kycCapPerMonth?: number | null;
  revenueSharePercent?: number;
}

const DEFAULTS: Record<Tier, TierLimits> = {
  FREE: {
    requestsPerMinute: 50,
    maxUsers: 10,
    monthlyVolumeMxn: "50000",
    dailyVolumeMxn: "20000",
    kycIncludedPerMonth: 10,
    kycCapPerMonth: 25,
    revenueSharePercent: "30",
  },
  GROWTH: {
    requestsPerMinute: 200,
    maxUsers: 500,
    monthlyVolumeMxn: "1000000",
    dailyVolumeMxn: "200000",
    kycIncludedPerMonth: 100,
    kycCapPerMonth: 1000,
    revenueSharePercent: "20",
  },
  ENTERPRISE: {
    requestsPerMinute: 1000,
    maxUsers: null,
    monthlyVolumeMxn: null,
    dailyVolumeMxn: null,
    kycIncludedPerMonth: 0,
    kycCapPerMonth: null,
    revenueSharePercent: "0",
  },
};

/** The limits in force for a partner: the tier's, with overrides applied only for ENTERPRISE. */
export function limitsFor(tier: Tier, overrides: LimitOverrides = {}): TierLimits {
  const base = DEFAULTS[tier];
  if (tier !== "ENTERPRISE") return base;
  const volume = (value: number | null | undefined, fallback: string | null) =>
    value === undefined ? fallback : value === null ? null : String(value);
  return {
    requestsPerMinute: requestsPerMinuteFor(tier, overrides),
    maxUsers: overrides.maxUsers === undefined ? base.maxUsers : overrides.maxUsers,
    monthlyVolumeMxn: volume(overrides.monthlyVolumeMxn, base.monthlyVolumeMxn),
    dailyVolumeMxn: volume(overrides.dailyVolumeMxn, base.dailyVolumeMxn),
    kycIncludedPerMonth: overrides.kycIncludedPerMonth ?? base.kycIncludedPerMonth,
    kycCapPerMonth: overrides.kycCapPerMonth === undefined ? base.kycCapPerMonth : overrides.kycCapPerMonth,
    revenueSharePercent: overrides.revenueSharePercent === undefined ? base.revenueSharePercent : String(overrides.revenueSharePercent),
  };
}

/** The requests a minute `limitsFor` allows, alone: what every partner request is counted against, without the rest of its limits. */
export function requestsPerMinuteFor(tier: Tier, overrides: LimitOverrides = {}): number {
  return (tier === "ENTERPRISE" ? overrides.requestsPerMinute : undefined) ?? DEFAULTS[tier].requestsPerMinute;
}

/** Unauthenticated requests are limited per client address at the FREE rate (decisions section 3). */
export const UNAUTHENTICATED_REQUESTS_PER_MINUTE = DEFAULTS.FREE.requestsPerMinute;
