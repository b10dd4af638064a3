// GET /dashboard/v1/usage against the code that enforces and bills (decisions 18, issue 16): the KYC
// sessions of the month as the cap counts them (a session being created included), the billed amount of
// the admin KYC usage, and the fee split of a trade completed on the real chain as the admin revenue
// report computes it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { reserveKycSession } from "../../src/kyc/sessions.ts";
import { assertError, createUser, startSession } from "../kyc/helpers.ts";
import { placeOrder, startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { memberOf } from "./support.ts";

type Usage = { kyc: { sessionsThisMonth: number; included: number; cap: number | null; billedUsd: number }; revenue: { feesCollectedUsdc: number; serviceShareUsdc: number; owedToPartnerUsdc: number } };

let stack: TradeStack;
let viewer: Awaited<ReturnType<typeof memberOf>>;
before(async () => {
  // One KYC session included, a cap of 3, a 20% service share; no fee wallet, so PARTNER fees are owed to it.
  stack = await startTradeStack({}, { kycModel: "SERVICE_PROVIDED", limits: { kycIncludedPerMonth: 1, kycCapPerMonth: 3, revenueSharePercent: 20 } });
  viewer = await memberOf(stack.service, stack.partner.id, "VIEWER");
});
after(async () => {
  await stack?.close();
});

const usage = async () => {
  const answer = await viewer.call<Usage>("GET", "/usage");
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};

test("KYC: the sessions the cap counts (one being created included) and the billed amount of the admin KYC usage", async () => {
  const { service, partner } = stack;
  const ref = await createUser(service, partner.apiKey);
  await startSession(service, partner.apiKey, ref, "BASIC");
  await startSession(service, partner.apiKey, ref, "FULL");
  const billing = await service.admin<{ billedAmountUsd: number; counts: { total: number } }>("GET", `/partners/${partner.id}/kyc-usage`);
  assert.equal(billing.status, 200, JSON.stringify(billing.body));
  assert.ok(billing.body.billedAmountUsd > 0, "the second session is billed");
  assert.deepEqual((await usage()).kyc, { sessionsThisMonth: 2, included: 1, cap: 3, billedUsd: billing.body.billedAmountUsd });

  // A session whose creation at the provider is under way already counts against the cap: the dashboard shows it.
  const { rows } = await service.pool.query<{ id: string }>("SELECT id FROM users WHERE partner_id = $1 AND partner_user_ref = $2", [partner.id, ref]);
  await reserveKycSession(service.pool, { partnerId: partner.id, userId: rows[0]!.id, level: "BASIC", returnUrl: "https://example.com/back", capPerMonth: 3 });
  const atCap = await usage();
  assert.equal(atCap.kyc.sessionsThisMonth, 3);
  assert.equal(atCap.kyc.sessionsThisMonth, atCap.kyc.cap);
  // What it shows is what is enforced: at the cap, the next session is refused.
  const refused = await service.api("POST", `/users/${ref}/kyc`, { key: partner.apiKey, body: { level: "BASIC", returnUrl: "https://example.com/back" } });
  assertError(refused, 403, "KYC_LIMIT_REACHED");
});

test("revenue: a completed trade's fees and the service's share, as the admin revenue report computes them", async () => {
  const { service, partner } = stack;
  const key = partner.apiKey;
  const order = await placeOrder(stack, { amountUsdc: 50, feePercent: 2, feeRecipient: "PARTNER" });
  for (const [action, status] of [["deposit", "ACTIVE"], ["lock", "LOCKED"], ["pay", "COMPLETED"]] as const) {
    const answer = await service.api("POST", `/sandbox/orders/${order.id}/${action}`, { key, body: {} });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await waitForStatus(stack, order.id, status, 60_000);
  }
  const shown = await waitFor("the fees in the usage", async () => {
    const body = await usage();
    return body.revenue.feesCollectedUsdc > 0 ? body.revenue : undefined;
  });
  const report = await service.admin<{ partnerFees: { usdc: number }; serviceShare: { usdc: number }; owedToPartnerUsdc: number }>("GET", `/partners/${partner.id}/revenue`);
  assert.equal(report.status, 200, JSON.stringify(report.body));
  assert.deepEqual(shown, { feesCollectedUsdc: report.body.partnerFees.usdc, serviceShareUsdc: report.body.serviceShare.usdc, owedToPartnerUsdc: report.body.owedToPartnerUsdc });
  // 2% of 50 USDC is 1 USDC; the service keeps 20% of it; the rest is owed to the partner (no fee wallet).
  assert.deepEqual(shown, { feesCollectedUsdc: 1, serviceShareUsdc: 0.2, owedToPartnerUsdc: 0.8 });
});
