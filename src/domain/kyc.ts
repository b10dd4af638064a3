export const KYC_LEVELS = ["BASIC", "FULL"] as const;
export type KycLevel = (typeof KYC_LEVELS)[number];
