import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { recoverTypedDataAddress, type Hex } from "viem";
import { escrowEip712Domain, orderTermsTypes } from "../../src/chain/escrow-abi.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { withCheckDigit } from "../../src/domain/clabe.ts";
import type { TestService } from "../support/service.ts";
import { OFFLINE_CHAIN, SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

let service: TestService;
let key: string;
let counter = 0;

before(async () => {
  service = await startOfflineOrderService();
  key = (await service.createPartner({ tier: "ENTERPRISE" })).apiKey;
});
after(() => service.close());

async function user(apiKey = key, ref = `u${++counter}`, body: Json = {}): Promise<string> {
  const response = await service.api("POST", "/users", { key: apiKey, body: { partnerUserRef: ref, ...body } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return ref;
}

async function quote(ref: string, amountUsdc = 100, apiKey = key, extra: Json = {}): Promise<string> {
  const response = await service.api<{ id: string }>("POST", "/quotes", { key: apiKey, body: { type: "SELL", amountUsdc, partnerUserRef: ref, ...extra } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.id;
}

function order(body: Json, apiKey = key) {
  return service.api<Json>("POST", "/orders", { key: apiKey, body });
}

function assertError(response: { status: number; body: Json }, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error, code);
  assert.equal(typeof response.body.message, "string");
}

describe("POST /orders", () => {
  test("creates a PENDING_DEPOSIT order with the create-response fields", async () => {
    const ref = await user();
    const quoteId = await quote(ref, 100);
    const response = await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const body = response.body;
    assert.match(String(body.id), /^ord_/);
    assert.match(String(body.escrowOrderId), /^0x[0-9a-f]{64}$/);
    assert.equal(body.status, "PENDING_DEPOSIT");
    assert.equal(body.token, "USDC");
    assert.equal(body.amountUsdc, 100);
    assert.equal(body.totalMxn, 1725);
    assert.equal(body.exchangeRate, 17.25);
    assert.equal(body.sellerClabe, SELLER_CLABE);
    assert.ok(["LOW", "MEDIUM", "HIGH"].includes(String(body.amlRiskLevel)));
    const created = Date.parse(String(body.createdAt));
    assert.equal(Date.parse(String(body.expiresAt)) - created, service.config.depositTimeoutSeconds * 1000);
  });

  test("the deposit terms are signed by the service for this escrow", async () => {
    const ref = await user();
    const response = await order({ quoteId: await quote(ref, 12.5), partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    const deposit = response.body.deposit as { chainId: number; escrowAddress: string; tokenAddress: string; amountRaw: string; terms: Record<string, string | number>; signature: Hex };
    assert.equal(deposit.amountRaw, "12500000");
    assert.equal(deposit.escrowAddress, OFFLINE_CHAIN.escrowAddress);
    const terms = deposit.terms;
    const signer = await recoverTypedDataAddress({
      domain: { ...escrowEip712Domain, chainId: deposit.chainId, verifyingContract: deposit.escrowAddress as Hex },
      types: orderTermsTypes,
      primaryType: "OrderTerms",
      message: {
        orderId: terms.orderId as Hex,
        token: terms.token as Hex,
        amount: BigInt(terms.amount!),
        feeBps: Number(terms.feeBps),
        feeRecipient: terms.feeRecipient as Hex,
        treasuryShareBps: Number(terms.treasuryShareBps),
        depositDeadline: BigInt(terms.depositDeadline!),
        listingWindow: BigInt(terms.listingWindow!),
        lockWindow: BigInt(terms.lockWindow!),
      },
      signature: deposit.signature,
    });
    assert.equal(signer, devAccounts[DEV_ACCOUNT.service].address);
    assert.equal(terms.orderId, response.body.escrowOrderId);
  });

  test("a USER fee is signed as basis points returned to the seller", async () => {
    const ref = await user();
    const response = await order({ quoteId: await quote(ref, 100, key, { feePercent: 2.5, feeRecipient: "USER" }), partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    const terms = (response.body.deposit as { terms: Json }).terms;
    assert.equal(terms.feeBps, 250);
    assert.equal(terms.feeRecipient, "0x0000000000000000000000000000000000000000");
    assert.equal(terms.treasuryShareBps, 0);
    assert.equal(response.body.totalMxn, 1681.87); // fee 43.125 rounds half-up to 43.13
  });

  test("a PARTNER fee goes to the partner's fee wallet with the tier's revenue share", async () => {
    const growth = await service.createPartner({ tier: "GROWTH", feeWallet: devAccounts[9].address });
    const ref = await user(growth.apiKey);
    const response = await order({ quoteId: await quote(ref, 10, growth.apiKey, { feePercent: 1, feeRecipient: "PARTNER" }), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, growth.apiKey);
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const terms = (response.body.deposit as { terms: Json }).terms;
    assert.equal(terms.feeBps, 100);
    assert.equal(terms.feeRecipient, devAccounts[9].address);
    assert.equal(terms.treasuryShareBps, 2000);
  });

  test("without a fee wallet, a PARTNER fee order while the treasury was never read is CHAIN_UNAVAILABLE and changes nothing", async () => {
    // This service's chain cannot be reached: the treasury (read from the escrow, never inside the
    // order's transaction) is unknown, so terms naming it cannot be signed.
    const walletless = await service.createPartner({ tier: "GROWTH" });
    const ref = await user(walletless.apiKey);
    const quoteId = await quote(ref, 10, walletless.apiKey, { feePercent: 1, feeRecipient: "PARTNER" });
    const refused = await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }, walletless.apiKey);
    assertError(refused, 503, "CHAIN_UNAVAILABLE");
    assert.ok(refused.headers.get("retry-after"));
    const orders = await service.api<{ total: number }>("GET", "/orders", { key: walletless.apiKey });
    assert.equal(orders.body.total, 0);
    // The quote was not consumed: a partner without a fee wallet and no fee still orders with it unread.
    const withoutFee = await quote(ref, 10, walletless.apiKey);
    assert.equal((await order({ quoteId: withoutFee, partnerUserRef: ref, sellerClabe: SELLER_CLABE }, walletless.apiKey)).status, 201);
    const quoteRow = await service.pool.query<{ used_at: Date | null }>("SELECT used_at FROM quotes WHERE id = $1", [quoteId]);
    assert.equal(quoteRow.rows[0]!.used_at, null);
  });

  test("missing fields are VALIDATION_ERROR", async () => {
    assertError(await order({ partnerUserRef: "x", sellerClabe: SELLER_CLABE }), 400, "VALIDATION_ERROR");
    assertError(await order({ quoteId: "qt_x", sellerClabe: SELLER_CLABE }), 400, "VALIDATION_ERROR");
    assertError(await order({ quoteId: "qt_x", partnerUserRef: "x" }), 400, "VALIDATION_ERROR");
  });

  test("a CLABE with a wrong check digit is INVALID_CLABE", async () => {
    const wrong = SELLER_CLABE.slice(0, 17) + String((Number(SELLER_CLABE[17]) + 1) % 10);
    assertError(await order({ quoteId: "qt_missing", partnerUserRef: "x", sellerClabe: wrong }), 400, "INVALID_CLABE");
  });

  test("a CLABE of a bank outside the SPEI catalogue is INVALID_CLABE", async () => {
    assertError(await order({ quoteId: "qt_missing", partnerUserRef: "x", sellerClabe: withCheckDigit("99918000118359719") }), 400, "INVALID_CLABE");
  });

  test("a CLABE that is not 18 digits is INVALID_CLABE", async () => {
    assertError(await order({ quoteId: "qt_missing", partnerUserRef: "x", sellerClabe: "01218000118359" }), 400, "INVALID_CLABE");
  });

  test("an unknown quote is INVALID_QUOTE", async () => {
    assertError(await order({ quoteId: "qt_missing", partnerUserRef: "x", sellerClabe: SELLER_CLABE }), 404, "INVALID_QUOTE");
  });

  test("another partner's quote is INVALID_QUOTE", async () => {
    const other = await service.createPartner({ tier: "ENTERPRISE" });
    const ref = await user(other.apiKey);
    const quoteId = await quote(ref, 5, other.apiKey);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 404, "INVALID_QUOTE");
  });

  test("a user ref other than the quote's is QUOTE_USER_MISMATCH", async () => {
    const ref = await user();
    const otherRef = await user();
    assertError(await order({ quoteId: await quote(ref), partnerUserRef: otherRef, sellerClabe: SELLER_CLABE }), 400, "QUOTE_USER_MISMATCH");
  });

  test("a used quote is QUOTE_USED", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    assert.equal((await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE })).status, 201);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 409, "QUOTE_USED");
  });

  test("an expired quote is QUOTE_EXPIRED", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    await service.pool.query("UPDATE quotes SET expires_at = now() - interval '1 second' WHERE id = $1", [quoteId]);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 410, "QUOTE_EXPIRED");
  });

  test("a used and expired quote is QUOTE_USED (checked first)", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    assert.equal((await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE })).status, 201);
    await service.pool.query("UPDATE quotes SET expires_at = now() - interval '1 second' WHERE id = $1", [quoteId]);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 409, "QUOTE_USED");
  });

  test("a sanctioned user is USER_SANCTIONED", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    await service.pool.query("UPDATE users SET is_sanctioned = true WHERE partner_user_ref = $1", [ref]);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 403, "USER_SANCTIONED");
  });

  test("the CLABE is checked before the quote", async () => {
    assertError(await order({ quoteId: "qt_missing", partnerUserRef: "x", sellerClabe: "123" }), 400, "INVALID_CLABE");
  });

  test("a failed order changes nothing: the quote stays usable", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    assertError(await order({ quoteId, partnerUserRef: ref, sellerClabe: "000000000000000000" }), 400, "INVALID_CLABE");
    assert.equal((await order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE })).status, 201);
  });

  test("a quote used by concurrent requests gives exactly one order", async () => {
    const ref = await user();
    const quoteId = await quote(ref);
    const responses = await Promise.all(Array.from({ length: 8 }, () => order({ quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE })));
    assert.equal(responses.filter((response) => response.status === 201).length, 1);
    for (const response of responses.filter((candidate) => candidate.status !== 201)) assertError(response, 409, "QUOTE_USED");
    const { rows } = await service.pool.query("SELECT count(*)::int AS n FROM orders WHERE quote_id = $1", [quoteId]);
    assert.equal(rows[0].n, 1);
  });

  test("the user's orderCount, totalVolumeMxn and monthlyVolumeMxn follow", async () => {
    const ref = await user();
    await order({ quoteId: await quote(ref, 100), partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    await order({ quoteId: await quote(ref, 10), partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    const detail = await service.api<Json>("GET", `/users/${ref}`, { key });
    assert.equal(detail.body.orderCount, 2);
    assert.equal(detail.body.totalVolumeMxn, 1897.5);
    assert.equal(detail.body.monthlyVolumeMxn, 1897.5);
    assert.ok(["LOW", "MEDIUM", "HIGH"].includes(String(detail.body.amlRiskLevel)));
  });
});

describe("partner volume limits", () => {
  // A FULL-attested user, so the KYC thresholds never answer first.
  const fullKyc = { kycAttestation: { level: "FULL", verifiedAt: "2026-01-01T00:00:00.000Z" } };

  test("an order that would pass the FREE daily limit of 20,000 MXN is VOLUME_LIMIT_EXCEEDED", async () => {
    const free = await service.createPartner({ tier: "FREE" });
    const ref = await user(free.apiKey, "daily", fullKyc);
    // 1,000 USDC at 17.25 = 17,250 MXN; 200 more (3,450) would make 20,700.
    assert.equal((await order({ quoteId: await quote(ref, 1000, free.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, free.apiKey)).status, 201);
    assertError(await order({ quoteId: await quote(ref, 200, free.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, free.apiKey), 403, "VOLUME_LIMIT_EXCEEDED");
    // 150 USDC (2,587.50) still fits: 19,837.50.
    assert.equal((await order({ quoteId: await quote(ref, 150, free.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, free.apiKey)).status, 201);
  });

  test("an order that would pass the monthly limit is VOLUME_LIMIT_EXCEEDED", async () => {
    const capped = await service.createPartner({ tier: "ENTERPRISE", limits: { monthlyVolumeMxn: 3000, dailyVolumeMxn: null } });
    const ref = await user(capped.apiKey, "monthly", fullKyc);
    assert.equal((await order({ quoteId: await quote(ref, 100, capped.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, capped.apiKey)).status, 201);
    // 1,725 + 1,293.75 = 3,018.75 > 3,000
    assertError(await order({ quoteId: await quote(ref, 75, capped.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, capped.apiKey), 403, "VOLUME_LIMIT_EXCEEDED");
    // exactly at the limit is accepted: 1,725 + 1,275 = 3,000
    assert.equal((await order({ quoteId: await quote(ref, 73.913043, capped.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, capped.apiKey)).status, 201);
  });

  test("concurrent orders of many users never pass the limit together", async () => {
    // 5 orders of 1,725 MXN fit exactly in 8,625; 12 users order at once, each with a quote ready.
    const capped = await service.createPartner({ tier: "ENTERPRISE", limits: { monthlyVolumeMxn: 8625, dailyVolumeMxn: null } });
    const pending = [];
    for (let i = 0; i < 12; i += 1) {
      const ref = await user(capped.apiKey, `concurrent-${i}`, fullKyc);
      pending.push({ quoteId: await quote(ref, 100, capped.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    }
    const responses = await Promise.all(pending.map((body) => order(body, capped.apiKey)));
    assert.equal(responses.filter((response) => response.status === 201).length, 5, JSON.stringify(responses.map((response) => response.status)));
    for (const refused of responses.filter((response) => response.status !== 201)) assertError(refused, 403, "VOLUME_LIMIT_EXCEEDED");
  });

  test("EXPIRED orders do not count toward the volume", async () => {
    const free = await service.createPartner({ tier: "FREE" });
    const ref = await user(free.apiKey, "expired", fullKyc);
    const first = await order({ quoteId: await quote(ref, 1000, free.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, free.apiKey);
    const cancelled = await service.api<Json>("POST", `/orders/${first.body.id}/cancel`, { key: free.apiKey });
    assert.equal(cancelled.body.status, "EXPIRED");
    assert.equal((await order({ quoteId: await quote(ref, 1000, free.apiKey), partnerUserRef: ref, sellerClabe: SELLER_CLABE }, free.apiKey)).status, 201);
  });
});
