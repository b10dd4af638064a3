import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Address } from "viem";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { mexicoMonth } from "../../src/domain/periods.ts";
import { disputeOrder, escrowCredit, resolve, usdcBalance, waitForAdminStatus } from "../disputes/support.ts";
import { divideHalfUp, scaled } from "../support/cents-oracle.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { SELLER_CLABE, startTradeStack, type TradeStack } from "../support/trade-stack.ts";

// GET /admin/v1/revenue and /partners/:id/revenue (decisions sections 3, 5 and 12): per partner and month,
// the volume of completed orders, the partner fees collected and the service's share of them. The
// expected figures are computed here in integers from each quote and order, and the USDC ones checked
// against what the escrow actually paid the fee wallets and the treasury.

interface Amounts {
  mxn: number;
  usdc: number;
  usdcRaw: string;
}
interface PartnerRevenue {
  partnerId: string;
  completedOrders: number;
  feeOrders: number;
  volume: Amounts;
  partnerFees: Amounts;
  serviceShare: Amounts;
  partnerNet: Amounts;
}
interface Report {
  month: string;
  partners: PartnerRevenue[];
  totals: Omit<PartnerRevenue, "partnerId">;
}

type Partner = { id: string; apiKey: string; webhookSecret: string; feeWallet: Address; sharePercent: number };

interface Placed {
  partner: Partner;
  orderId: string;
  escrowOrderId: string;
  amountUsdc: string;
  totalMxn: number;
  feeMxn: number;
  feePercent: string;
  feeRecipient: string;
}

const TREASURY = devAccounts[DEV_ACCOUNT.treasury].address;
let stack: TradeStack;
let free: Partner;
let growth: Partner;
let treasuryBefore: bigint;
const completed: Placed[] = [];
const notCompleted: Placed[] = [];
let buyerWallet = 1;

async function placeWithFee(partner: Partner, amountUsdc: string, feePercent: string, feeRecipient: string): Promise<Placed> {
  const key = partner.apiKey;
  const ref = `rev-${Math.random().toString(36).slice(2, 10)}`;
  assertStatus(await stack.service.api("POST", "/users", { key, body: { partnerUserRef: ref } }), 201);
  const quote = await stack.service.api<{ id: string; feeAmountMxn: number }>("POST", "/quotes", {
    key,
    body: { type: "SELL", amountUsdc: Number(amountUsdc), partnerUserRef: ref, feePercent: Number(feePercent), feeRecipient },
  });
  assertStatus(quote, 201);
  const order = await stack.service.api<{ id: string; escrowOrderId: string; totalMxn: number }>("POST", "/orders", {
    key,
    body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE },
  });
  assertStatus(order, 201);
  return { partner, orderId: order.body.id, escrowOrderId: order.body.escrowOrderId, amountUsdc, totalMxn: order.body.totalMxn, feeMxn: quote.body.feeAmountMxn, feePercent, feeRecipient };
}

/** Takes the order through a dispute that the operator resolves with `outcome`; waits for `status`. */
async function settle(placed: Placed, outcome: string, status: string): Promise<void> {
  const asPartner = { ...stack, partner: placed.partner };
  // Sandbox wallets 1-4: wallet 5 is on the sanctions list, and a held buyer cannot be paid by a resolution.
  buyerWallet = (buyerWallet % 4) + 1;
  await disputeOrder(asPartner, { id: placed.orderId, escrowOrderId: placed.escrowOrderId }, { by: "BUYER", buyerWallet });
  await resolve(stack, placed.orderId, outcome);
  await waitForAdminStatus(stack, placed.orderId, status);
}

before(async () => {
  stack = await startTradeStack();
  const make = async (name: string, tier: string, sharePercent: number, wallet: string): Promise<Partner> => {
    const feeWallet = `0x${wallet.padStart(40, "0")}` as Address;
    const partner = await stack.service.createPartner({ name, tier, feeWallet });
    return { ...partner, feeWallet, sharePercent };
  };
  free = await make("Free partner", "FREE", 30, "f1ee");
  growth = await make("Growth partner", "GROWTH", 20, "96041");
  treasuryBefore = await escrowCredit(stack, TREASURY);

  // Completed in this month: releases by the buyer outcome and by no-fault release. The amounts make
  // rounding matter: a's share is 450,556.5 units and d's 532,800.8 (rounded down, not to nearest), and
  // b's share in MXN is 2.157 (rounded half-up to 2.16, not down).
  const a = await placeWithFee(free, "100.1237", "1.5", "PARTNER");
  await settle(a, "BUYER", "COMPLETED");
  const b = await placeWithFee(free, "55.6", "0.75", "PARTNER");
  await settle(b, "NO_FAULT_RELEASE", "COMPLETED");
  const c = await placeWithFee(free, "40", "2", "USER");
  await settle(c, "BUYER", "COMPLETED");
  const d = await placeWithFee(growth, "80.000121", "3.33", "PARTNER");
  await settle(d, "BUYER", "COMPLETED");
  completed.push(a, b, c, d);
  // Not completed: refunded after a dispute, and one still disputed.
  const e = await placeWithFee(free, "30", "1", "PARTNER");
  await settle(e, "SELLER", "REFUNDED");
  const f = await placeWithFee(growth, "25", "1", "PARTNER");
  await disputeOrder({ ...stack, partner: growth }, { id: f.orderId, escrowOrderId: f.escrowOrderId }, { by: "SELLER", buyerWallet: 5 });
  notCompleted.push(e, f);
});
after(() => stack?.close());

/** What the report must say for a partner, from its completed orders (integers only). */
function expected(partner: Partner) {
  const mine = completed.filter((placed) => placed.partner === partner);
  const withFee = mine.filter((placed) => placed.feeRecipient === "PARTNER");
  const shareBps = BigInt(partner.sharePercent * 100);
  const feeRaw = (placed: Placed) => (scaled(placed.amountUsdc, 6) * scaled(placed.feePercent, 2)) / 10_000n;
  const feesRaw = withFee.reduce((sum, placed) => sum + feeRaw(placed), 0n);
  const shareRaw = withFee.reduce((sum, placed) => sum + (feeRaw(placed) * shareBps) / 10_000n, 0n);
  const cents = (mxn: number) => scaled(mxn.toFixed(2), 2);
  const feesCents = withFee.reduce((sum, placed) => sum + cents(placed.feeMxn), 0n);
  const shareCents = withFee.reduce((sum, placed) => sum + divideHalfUp(cents(placed.feeMxn) * shareBps, 10_000n), 0n);
  return {
    completedOrders: mine.length,
    feeOrders: withFee.length,
    volumeCents: mine.reduce((sum, placed) => sum + cents(placed.totalMxn), 0n),
    volumeRaw: mine.reduce((sum, placed) => sum + scaled(placed.amountUsdc, 6), 0n),
    feesRaw,
    shareRaw,
    feesCents,
    shareCents,
  };
}

const centsOf = (mxn: number) => scaled(mxn.toFixed(2), 2);

async function report(month?: string): Promise<Report> {
  const response = await stack.service.admin<Report>("GET", `/revenue${month ? `?month=${month}` : ""}`);
  assertStatus(response, 200);
  return response.body;
}

test("the month's report lists each partner with completed orders and no other", async () => {
  const body = await report(mexicoMonth(new Date()));
  assert.deepEqual(body.partners.map((row) => row.partnerId).sort(), [free.id, growth.id].sort());
});

test("volume is the completed orders' totalMxn and amountUsdc; refunded and disputed orders do not count", async () => {
  const body = await report();
  for (const partner of [free, growth]) {
    const row = body.partners.find((candidate) => candidate.partnerId === partner.id)!;
    const want = expected(partner);
    assert.equal(row.completedOrders, want.completedOrders);
    assert.equal(centsOf(row.volume.mxn), want.volumeCents);
    assert.equal(BigInt(row.volume.usdcRaw), want.volumeRaw);
  }
});

test("partner fees are the PARTNER fees of completed orders: floor(amount x feeBps / 10000) in USDC, the quotes' fee in MXN", async () => {
  const body = await report();
  for (const partner of [free, growth]) {
    const row = body.partners.find((candidate) => candidate.partnerId === partner.id)!;
    const want = expected(partner);
    assert.equal(row.feeOrders, want.feeOrders);
    assert.equal(BigInt(row.partnerFees.usdcRaw), want.feesRaw);
    assert.equal(centsOf(row.partnerFees.mxn), want.feesCents);
  }
});

test("the service's share is the tier's percentage of each fee: rounded down in USDC, half-up to cents in MXN", async () => {
  const body = await report();
  for (const partner of [free, growth]) {
    const row = body.partners.find((candidate) => candidate.partnerId === partner.id)!;
    const want = expected(partner);
    assert.equal(BigInt(row.serviceShare.usdcRaw), want.shareRaw);
    assert.equal(centsOf(row.serviceShare.mxn), want.shareCents);
    assert.equal(BigInt(row.partnerNet.usdcRaw), want.feesRaw - want.shareRaw);
    assert.equal(centsOf(row.partnerNet.mxn), want.feesCents - want.shareCents);
  }
});

test("the USDC figures are what the escrow credited: each fee wallet its partner's net, the treasury the shares", async () => {
  // Pull payments (decisions 5): fee shares are credited in the escrow at release and withdrawn later.
  const body = await report();
  for (const partner of [free, growth]) {
    const row = body.partners.find((candidate) => candidate.partnerId === partner.id)!;
    assert.equal(await escrowCredit(stack, partner.feeWallet), BigInt(row.partnerNet.usdcRaw));
    assert.equal(await usdcBalance(stack, partner.feeWallet), 0n);
  }
  assert.equal((await escrowCredit(stack, TREASURY)) - treasuryBefore, BigInt(body.totals.serviceShare.usdcRaw));
});

test("totals add up the partners' rows", async () => {
  const body = await report();
  const sum = (pick: (row: PartnerRevenue) => string) => body.partners.reduce((total, row) => total + BigInt(pick(row)), 0n);
  assert.equal(BigInt(body.totals.volume.usdcRaw), sum((row) => row.volume.usdcRaw));
  assert.equal(BigInt(body.totals.partnerFees.usdcRaw), sum((row) => row.partnerFees.usdcRaw));
  assert.equal(BigInt(body.totals.serviceShare.usdcRaw), sum((row) => row.serviceShare.usdcRaw));
  assert.equal(centsOf(body.totals.serviceShare.mxn), body.partners.reduce((total, row) => total + centsOf(row.serviceShare.mxn), 0n));
  assert.equal(body.totals.completedOrders, completed.length);
});

test("a month without completed orders has no rows and zero totals", async () => {
  const body = await report("2020-01");
  assert.equal(body.month, "2020-01");
  assert.deepEqual(body.partners, []);
  assert.deepEqual(body.totals.serviceShare, { mxn: 0, usdc: 0, usdcRaw: "0" });
});

test("one partner's month answers the same row, and zeros for a partner with nothing completed", async () => {
  const month = mexicoMonth(new Date());
  const one = await stack.service.admin<PartnerRevenue & { month: string }>("GET", `/partners/${growth.id}/revenue?month=${month}`);
  assertStatus(one, 200);
  const fromReport = (await report(month)).partners.find((row) => row.partnerId === growth.id)!;
  assert.deepEqual({ ...one.body, month: undefined, timeZone: undefined, from: undefined, to: undefined }, { ...fromReport, month: undefined, timeZone: undefined, from: undefined, to: undefined });
  const idle = await stack.service.admin<PartnerRevenue>("GET", `/partners/${stack.partner.id}/revenue`);
  assert.equal(idle.body.completedOrders, 0);
  assert.deepEqual(idle.body.serviceShare, { mxn: 0, usdc: 0, usdcRaw: "0" });
});

test("an unknown partner is 404 and a malformed month is VALIDATION_ERROR", async () => {
  assertError(await stack.service.admin("GET", "/partners/ptn_unknown/revenue"), 404, "NOT_FOUND");
  assertError(await stack.service.admin("GET", "/revenue?month=2026-13"), 400, "VALIDATION_ERROR");
  assertError(await stack.service.admin("GET", "/revenue?month=November"), 400, "VALIDATION_ERROR");
});
