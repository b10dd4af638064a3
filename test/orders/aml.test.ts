import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assessAml, type AmlFactors } from "../../src/domain/aml.ts";
import type { TestService } from "../support/service.ts";
import { SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

const quiet: AmlFactors = {
  totalMxn: "1000",
  ordersLast24h: 0,
  monthlyVolumeWithOrderMxn: "1000",
  kycTier: "NONE",
  accountAgeMs: 30 * 86_400_000,
  isPep: false,
  sanctionedWallet: false,
};

describe("AML score rules", () => {
  test("a small order from an established user is LOW with score 0", () => {
    assert.deepEqual(assessAml(quiet), { score: 0, level: "LOW", reasons: [] });
  });

  test("amount bands add 10, 20 and 30", () => {
    assert.equal(assessAml({ ...quiet, totalMxn: "10000", kycTier: "FULL" }).score, 10);
    assert.equal(assessAml({ ...quiet, totalMxn: "50000", kycTier: "FULL" }).score, 20);
    assert.equal(assessAml({ ...quiet, totalMxn: "100000", kycTier: "FULL" }).score, 30);
  });

  test("velocity adds 10 from 3 orders and 20 from 5 orders in 24 hours", () => {
    assert.equal(assessAml({ ...quiet, ordersLast24h: 3 }).score, 10);
    assert.equal(assessAml({ ...quiet, ordersLast24h: 5 }).score, 20);
  });

  test("monthly volume beyond the KYC tier adds 15 or 20", () => {
    assert.equal(assessAml({ ...quiet, monthlyVolumeWithOrderMxn: "10000" }).score, 15);
    assert.equal(assessAml({ ...quiet, monthlyVolumeWithOrderMxn: "50000.01", kycTier: "BASIC" }).score, 20);
    assert.equal(assessAml({ ...quiet, monthlyVolumeWithOrderMxn: "50000.01", kycTier: "FULL" }).score, 0);
  });

  test("a young account adds 10 under a day and 5 under a week", () => {
    assert.equal(assessAml({ ...quiet, accountAgeMs: 3_600_000 }).score, 10);
    assert.equal(assessAml({ ...quiet, accountAgeMs: 3 * 86_400_000 }).score, 5);
  });

  test("levels: below 40 LOW, 40 to 69 MEDIUM, 70 and above HIGH", () => {
    assert.equal(assessAml({ ...quiet, isPep: true, ordersLast24h: 3 }).level, "MEDIUM"); // 40
    assert.equal(assessAml({ ...quiet, isPep: true, totalMxn: "100000", kycTier: "FULL", ordersLast24h: 3 }).level, "HIGH"); // 70
    assert.equal(assessAml({ ...quiet, isPep: true, totalMxn: "10000", kycTier: "FULL" }).level, "MEDIUM"); // 40
    assert.equal(assessAml({ ...quiet, isPep: true }).level, "LOW"); // 30
  });

  test("a sanctioned wallet makes the order HIGH, capped at 100", () => {
    assert.deepEqual([assessAml({ ...quiet, sanctionedWallet: true, isPep: true }).score, assessAml({ ...quiet, sanctionedWallet: true }).level], [100, "HIGH"]);
  });
});

describe("AML on POST /orders", () => {
  let service: TestService;
  let key: string;
  before(async () => {
    service = await startOfflineOrderService();
    key = (await service.createPartner({ tier: "ENTERPRISE", kycModel: "SERVICE_PROVIDED" })).apiKey;
  });
  after(() => service.close());

  async function placeOrder(ref: string): Promise<Json> {
    const quote = await service.api<{ id: string }>("POST", "/quotes", { key, body: { type: "SELL", amountUsdc: 10, partnerUserRef: ref } });
    const order = await service.api<{ id: string }>("POST", "/orders", { key, body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE } });
    return (await service.api<Json>("GET", `/orders/${order.body.id}`, { key })).body;
  }

  test("a PEP flag from the KYC provider's screening raises the order's score by 30", async () => {
    await service.api("POST", "/users", { key, body: { partnerUserRef: "plain" } });
    await service.api("POST", "/users", { key, body: { partnerUserRef: "pep" } });
    const session = await service.api<{ sessionId: string }>("POST", "/users/pep/kyc", { key, body: { level: "BASIC", returnUrl: "https://partner.example/back" } });
    assert.equal(session.status, 201, JSON.stringify(session.body));
    const decided = await service.api<Json>("POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { key, body: { result: "APPROVED", isPep: true } });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.isPep, true);

    const plain = await placeOrder("plain");
    const pep = await placeOrder("pep");
    assert.equal(Number(pep.amlRiskScore) - Number(plain.amlRiskScore), 30);
    const user = await service.api<Json>("GET", "/users/pep", { key });
    assert.equal(user.body.amlRiskLevel, pep.amlRiskLevel, "the user's level is that of their latest order");
  });
});
