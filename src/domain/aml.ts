import { money } from "./money.ts";

// AML risk score for an order, 0 to 100, from documented rules (decisions section 6; docs/aml.md):
//   amount:      totalMxn >= 100,000: +30; >= 50,000: +20; >= 10,000: +10
//   velocity:    the user's orders in the last 24 h before this one: >= 5: +20; >= 3: +10
//   KYC vs volume: monthly volume with this order above 50,000 without FULL: +20;
//                at least 10,000 with no KYC: +15
//   account age: user registered less than 1 day ago: +10; less than 7 days: +5
//   PEP:         +30
//   sanctions:   a wallet the user has used is on the sanctions list: +100
// The sum is capped at 100. LOW below 40, MEDIUM 40 to 69, HIGH 70 and above.

export type AmlRiskLevel = "LOW" | "MEDIUM" | "HIGH";

export interface AmlFactors {
  totalMxn: string;
  ordersLast24h: number;
  monthlyVolumeWithOrderMxn: string;
  kycTier: "NONE" | "BASIC" | "FULL";
  accountAgeMs: number;
  isPep: boolean;
  sanctionedWallet: boolean;
}

export interface AmlAssessment {
  score: number;
  level: AmlRiskLevel;
  reasons: string[];
}

const DAY_MS = 86_400_000;

export function amlLevel(score: number): AmlRiskLevel {
  return score >= 70 ? "HIGH" : score >= 40 ? "MEDIUM" : "LOW";
}

export function assessAml(factors: AmlFactors): AmlAssessment {
  const reasons: string[] = [];
  let score = 0;
  const add = (points: number, reason: string) => {
    score += points;
    reasons.push(`${reason} (+${points})`);
  };
  const total = money(factors.totalMxn);
  if (total.gte(100_000)) add(30, "amount at least 100,000 MXN");
  else if (total.gte(50_000)) add(20, "amount at least 50,000 MXN");
  else if (total.gte(10_000)) add(10, "amount at least 10,000 MXN");
  if (factors.ordersLast24h >= 5) add(20, "5 or more orders in 24 h");
  else if (factors.ordersLast24h >= 3) add(10, "3 or more orders in 24 h");
  const monthly = money(factors.monthlyVolumeWithOrderMxn);
  if (monthly.gt(50_000) && factors.kycTier !== "FULL") add(20, "monthly volume above 50,000 MXN without FULL KYC");
  else if (monthly.gte(10_000) && factors.kycTier === "NONE") add(15, "monthly volume at least 10,000 MXN without KYC");
  if (factors.accountAgeMs < DAY_MS) add(10, "account younger than 1 day");
  else if (factors.accountAgeMs < 7 * DAY_MS) add(5, "account younger than 7 days");
  if (factors.isPep) add(30, "politically exposed person");
  if (factors.sanctionedWallet) add(100, "wallet on the sanctions list");
  const capped = Math.min(100, score);
  return { score: capped, level: amlLevel(capped), reasons };
}
