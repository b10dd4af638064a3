import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { lockQuoteWithUser } from "../../src/quotes/quotes.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// One partner never sees another's users or quotes: they answer as if they did not exist.
let service: TestService;
let a: { id: string; apiKey: string };
let b: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  a = await service.createPartner({ name: "Partner A" });
  b = await service.createPartner({ name: "Partner B" });
});
after(() => service.close());

async function register(partner: { apiKey: string }, partnerUserRef: string) {
  const response = await service.api<{ id: string }>("POST", "/users", { key: partner.apiKey, body: { partnerUserRef } });
  assertStatus(response, 201);
  return response.body;
}

test("a partner gets NOT_FOUND for a user only another partner registered", async () => {
  await register(b, "only-at-b");
  assertError(await service.api("GET", "/users/only-at-b", { key: a.apiKey }), 404, "NOT_FOUND");
});

test("two partners may register the same partnerUserRef and each sees only its own user", async () => {
  const atA = await register(a, "shared-ref");
  const atB = await register(b, "shared-ref");
  assert.notEqual(atA.id, atB.id);
  assert.equal((await service.api("GET", "/users/shared-ref", { key: a.apiKey })).body.id, atA.id);
  assert.equal((await service.api("GET", "/users/shared-ref", { key: b.apiKey })).body.id, atB.id);
});

test("a partner cannot attest KYC for another partner's user", async () => {
  await register(b, "attest-target");
  const response = await service.api("POST", "/users/attest-target/kyc-attestation", {
    key: a.apiKey,
    body: { level: "FULL", verifiedAt: new Date().toISOString() },
  });
  assertError(response, 404, "NOT_FOUND");
  const atB = await service.api("GET", "/users/attest-target", { key: b.apiKey });
  assert.equal(atB.body.kycStatus, "NOT_REQUIRED");
  assert.equal(atB.body.kycTier, "NONE");
});

test("a partner cannot quote for another partner's user: NOT_FOUND and no quote is created", async () => {
  await register(b, "quote-target");
  const response = await service.api("POST", "/quotes", { key: a.apiKey, body: { type: "SELL", amountUsdc: 10, partnerUserRef: "quote-target" } });
  assertError(response, 404, "NOT_FOUND");
  const { rows } = await service.pool.query("SELECT 1 FROM quotes WHERE partner_id = $1", [a.id]);
  assert.equal(rows.length, 0);
});

test("with a ref both partners use, a quote is bound to the quoting partner's own user", async () => {
  const atA = await register(a, "both-quote");
  await register(b, "both-quote");
  const quote = await service.api<{ id: string }>("POST", "/quotes", { key: a.apiKey, body: { type: "SELL", amountUsdc: 10, partnerUserRef: "both-quote" } });
  assertStatus(quote, 201);
  const { rows } = await service.pool.query<{ user_id: string; partner_id: string }>("SELECT user_id, partner_id FROM quotes WHERE id = $1", [quote.body.id]);
  assert.deepEqual(rows[0], { user_id: atA.id, partner_id: a.id });
});

test("a quote looked up by another partner is not found", async () => {
  await register(a, "quote-owner");
  const quote = await service.api<{ id: string }>("POST", "/quotes", { key: a.apiKey, body: { type: "SELL", amountUsdc: 5, partnerUserRef: "quote-owner" } });
  assertStatus(quote, 201);
  // The lookup an order makes of its quote (and the quote's user).
  assert.equal((await lockQuoteWithUser(service.pool, a.id, quote.body.id))?.quote.id, quote.body.id);
  assert.equal(await lockQuoteWithUser(service.pool, b.id, quote.body.id), undefined);
});
