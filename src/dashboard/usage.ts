import type { Queryable } from "../db/pool.ts";
import { mexicoMonth, mexicoPeriodStart } from "../domain/periods.ts";
import { toJsonNumber } from "../domain/money.ts";
import { partnerRateBucket } from "../http/middleware/partner-auth.ts";
import type { RateLimits } from "../http/middleware/rate-limit.ts";
import { partnerRevenue } from "../admin/revenue.ts";
import { kycSessionsCountedAgainstCap } from "../kyc/sessions.ts";
import { kycUsage } from "../kyc/usage.ts";
import { partnerVolumeSince } from "../orders/create-order.ts";
import { effectiveLimits, type Partner } from "../partners/partners.ts";
import { countPartnerUsers } from "../users/users.ts";

/**
 * `GET /dashboard/v1/usage` (decisions section 18). Every figure is read by the code that enforces its
 * limit, so what the partner sees is what is enforced:
 *
 * - requests: the partner's bucket of the shared one-minute windows, read by the same `RateLimits` that
 *   partner authentication counts with (src/http/middleware/partner-auth.ts, rate-limit.ts), on its clock;
 * - users: the count POST /users checks against the tier (src/users/users.ts);
 * - volume: the day and month sums POST /orders checks (src/orders/create-order.ts), Mexico City periods;
 * - kyc: the month's sessions as the cap counts them (src/kyc/sessions.ts, a session being created
 *   included), the allocation, the cap and the billed amount (src/kyc/usage.ts, the admin API's view);
 * - revenue: the month's fee split of completed orders (src/admin/revenue.ts, the admin revenue report).
 *
 * Limits are the partner's effective limits; `null` means unlimited. Dashboard requests themselves are
 * never counted in the API window.
 */
export async function partnerUsage(db: Queryable, rateLimits: RateLimits, partner: Partner) {
  const limits = effectiveLimits(partner);
  const at = new Date();
  const [requests, users, dayMxn, monthMxn, kycSessions, kyc, revenue] = await Promise.all([
    rateLimits.usage(partnerRateBucket(partner.id), limits.requestsPerMinute),
    countPartnerUsers(db, partner.id),
    partnerVolumeSince(db, partner.id, mexicoPeriodStart("day", at)),
    partnerVolumeSince(db, partner.id, mexicoPeriodStart("month", at)),
    kycSessionsCountedAgainstCap(db, partner.id, mexicoMonth(at)),
    kycUsage(db, partner.id, mexicoMonth(at)),
    partnerRevenue(db, partner.id),
  ]);
  const amount = (value: string | null) => (value === null ? null : toJsonNumber(value));
  return {
    requests: { used: requests.used, limit: requests.limit, resetsAt: new Date(requests.resetAt * 1000).toISOString() },
    users: { count: users, limit: limits.maxUsers },
    volume: {
      dayMxn: toJsonNumber(dayMxn),
      dailyLimitMxn: amount(limits.dailyVolumeMxn),
      monthMxn: toJsonNumber(monthMxn),
      monthlyLimitMxn: amount(limits.monthlyVolumeMxn),
    },
    kyc: { sessionsThisMonth: kycSessions, included: kyc.includedPerMonth, cap: kyc.capPerMonth, billedUsd: kyc.billedAmountUsd },
    revenue: {
      feesCollectedUsdc: revenue.partnerFees.usdc,
      serviceShareUsdc: revenue.serviceShare.usdc,
      // Decisions section 5: a PARTNER fee of a partner without a fee wallet went to the treasury and is owed to it.
      owedToPartnerUsdc: revenue.owedToPartnerUsdc,
    },
  };
}
