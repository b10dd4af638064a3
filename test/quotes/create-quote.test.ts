import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { createQuote, type NewQuote } from "../../src/quotes/quotes.ts";
import { startTestService, type TestService } from "../support/service.ts";

const QUOTE_FIELDS = ["amountUsdc", "exchangeRate", "expiresAt", "feeAmountMxn", "feePercent", "feeRecipient", "grossAmountMxn", "id", "netAmountMxn", "type"];

let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService({ QUOTE_TTL_SECONDS: "120" });
  partner = await service.createPartner({ tier: "ENTERPRISE" });
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "seller" } }), 201);
});
beforeEach(async () => {
  service.simulators!.banxico.setMode("normal");
  service.simulators!.banxico.setRate("17.2500");
  service.simulators!.fallbackRate.setMode("normal");
  service.simulators!.fallbackRate.setRate("17.3100");
  await service.pool.query("DELETE FROM exchange_rates");
});
after(() => service.close());

function quote(body: Record<string, unknown>) {
  return service.api("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", partnerUserRef: "seller", ...body } });
}

async function quoteCount(): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM quotes");
  return Number(rows[0]!.n);
}

test("a quote answers 201 with exactly the quote fields and the fee arithmetic of the spec", async () => {
  const response = await quote({ amountUsdc: 100, feePercent: 1.5, feeRecipient: "PARTNER" });
  assertStatus(response, 201);
  assert.deepEqual(Object.keys(response.body).sort(), QUOTE_FIELDS);
  assert.match(String(response.body.id), /^qt_[0-9a-f]+$/);
  assert.match(String(response.body.expiresAt), ISO_MILLIS);
  assert.deepEqual(
    { ...response.body, id: undefined, expiresAt: undefined },
    {
      id: undefined,
      type: "SELL",
      amountUsdc: 100,
      exchangeRate: 17.25,
      grossAmountMxn: 1725,
      feePercent: 1.5,
      feeAmountMxn: 25.88, // 25.875 rounded half-up
      feeRecipient: "PARTNER",
      netAmountMxn: 1699.12,
      expiresAt: undefined,
    },
  );
});

test("without a fee the quote has feePercent 0, feeAmountMxn 0, feeRecipient NONE and net = gross", async () => {
  const response = await quote({ amountUsdc: 12.345678 });
  assertStatus(response, 201);
  assert.equal(response.body.feePercent, 0);
  assert.equal(response.body.feeAmountMxn, 0);
  assert.equal(response.body.feeRecipient, "NONE");
  assert.equal(response.body.grossAmountMxn, 212.96); // 212.9629455
  assert.equal(response.body.netAmountMxn, 212.96);
});

test("a fee for the USER is accepted and priced like a partner fee", async () => {
  const response = await quote({ amountUsdc: 10, feePercent: 10, feeRecipient: "USER" });
  assertStatus(response, 201);
  assert.equal(response.body.feeRecipient, "USER");
  assert.equal(response.body.feeAmountMxn, 17.25);
  assert.equal(response.body.netAmountMxn, 155.25);
});

test("a recipient with a zero fee is accepted", async () => {
  const response = await quote({ amountUsdc: 10, feePercent: 0, feeRecipient: "PARTNER" });
  assertStatus(response, 201);
  assert.equal(response.body.feeAmountMxn, 0);
});

test("the quote expires QUOTE_TTL_SECONDS after it is created", async () => {
  const before = Date.now();
  const response = await quote({ amountUsdc: 1 });
  const after = Date.now();
  const expiresAt = Date.parse(String(response.body.expiresAt));
  assert.ok(expiresAt >= before + 120_000 - 1000 && expiresAt <= after + 120_000 + 1000, `expiresAt ${String(response.body.expiresAt)}`);
});

test("exchangeRate is the central bank's FIX rate at its precision", async () => {
  service.simulators!.banxico.setRate("18.1234");
  const response = await quote({ amountUsdc: 2 });
  assert.equal(response.body.exchangeRate, 18.1234);
  assert.equal(response.body.grossAmountMxn, 36.25); // 36.2468
  const { rows } = await service.pool.query<{ rate_source: string }>("SELECT rate_source FROM quotes WHERE id = $1", [response.body.id]);
  assert.equal(rows[0]!.rate_source, "central_bank");
});

test("when the central bank has no determination the quote uses the fallback provider's rate", async () => {
  service.simulators!.banxico.setMode("no_determination");
  const response = await quote({ amountUsdc: 2 });
  assertStatus(response, 201);
  assert.equal(response.body.exchangeRate, 17.31);
  assert.equal(response.body.grossAmountMxn, 34.62);
  const { rows } = await service.pool.query<{ rate_source: string }>("SELECT rate_source FROM quotes WHERE id = $1", [response.body.id]);
  assert.equal(rows[0]!.rate_source, "fallback_provider");
});

test("the quote is stored unused, bound to the user, with the amounts it answered", async () => {
  const response = await quote({ amountUsdc: 3.5, feePercent: 2, feeRecipient: "PARTNER" });
  const { rows } = await service.pool.query<Record<string, unknown>>(
    `SELECT q.partner_id, u.partner_user_ref, q.amount_usdc, q.exchange_rate, q.gross_mxn, q.fee_percent, q.fee_mxn, q.net_mxn, q.fee_recipient, q.used_at
       FROM quotes q JOIN users u ON u.id = q.user_id WHERE q.id = $1`,
    [response.body.id],
  );
  assert.deepEqual(rows[0], {
    partner_id: partner.id,
    partner_user_ref: "seller",
    amount_usdc: "3.500000",
    exchange_rate: "17.250000",
    gross_mxn: "60.38", // 60.375
    fee_percent: "2.00",
    fee_mxn: "1.21", // 1.2076
    net_mxn: "59.17",
    fee_recipient: "PARTNER",
    used_at: null,
  });
});

test("a quote for an unknown partnerUserRef answers 404 NOT_FOUND and creates no quote", async () => {
  const before = await quoteCount();
  const response = await service.api("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", amountUsdc: 1, partnerUserRef: "ghost" } });
  assertError(response, 404, "NOT_FOUND");
  assert.equal(await quoteCount(), before);
});

test("with both rate sources down and no recent rate a quote answers 502 RATE_UNAVAILABLE and creates nothing", async () => {
  service.simulators!.banxico.setMode("down");
  service.simulators!.fallbackRate.setMode("down");
  const before = await quoteCount();
  assertError(await quote({ amountUsdc: 1 }), 502, "RATE_UNAVAILABLE");
  assert.equal(await quoteCount(), before);
});

test("an unknown partnerUserRef is told 404 NOT_FOUND before an unavailable rate", async () => {
  service.simulators!.banxico.setMode("down");
  service.simulators!.fallbackRate.setMode("down");
  const before = await quoteCount();
  assertError(await service.api("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", amountUsdc: 1, partnerUserRef: "ghost" } }), 404, "NOT_FOUND");
  assert.equal(await quoteCount(), before);
});

test("a sanctioned user's quote answers 403 USER_SANCTIONED and creates no quote, whether a rate is available or not", async () => {
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "listed" } }), 201);
  await service.pool.query("UPDATE users SET is_sanctioned = true WHERE partner_id = $1 AND partner_user_ref = 'listed'", [partner.id]);
  const before = await quoteCount();
  const listed = () => service.api("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", amountUsdc: 1, partnerUserRef: "listed" } });
  assertError(await listed(), 403, "USER_SANCTIONED");
  service.simulators!.banxico.setMode("down");
  service.simulators!.fallbackRate.setMode("down");
  await service.pool.query("DELETE FROM exchange_rates");
  assertError(await listed(), 403, "USER_SANCTIONED");
  assert.equal(await quoteCount(), before);
});

test("a database session that made a quote makes the next one after a migration adds a column to quotes", async () => {
  // The quote's insert is a named statement each session keeps; one that returned `*` failed in every such
  // session once the table had another column ("cached plan must not change result type").
  const session = await service.pool.connect();
  const { rows } = await service.pool.query<{ id: string; fetched_at: Date }>("INSERT INTO exchange_rates (usd_mxn, source) VALUES (17.25, 'central_bank') RETURNING id, fetched_at");
  const input: NewQuote = {
    partnerId: partner.id,
    partnerUserRef: "seller",
    amountUsdc: "10",
    feePercent: "1",
    feeRecipient: "NONE",
    rate: { id: rows[0]!.id, usdMxn: "17.250000", source: "central_bank", fetchedAt: rows[0]!.fetched_at },
    ttlSeconds: 120,
  };
  try {
    assert.ok("quote" in (await createQuote(session, input)));
    await service.pool.query("ALTER TABLE quotes ADD COLUMN added_by_a_migration text");
    const next = await createQuote(session, input);
    assert.equal("quote" in next && next.quote.netAmountMxn, "170.77");
  } finally {
    session.release();
    await service.pool.query("ALTER TABLE quotes DROP COLUMN IF EXISTS added_by_a_migration");
  }
});

// The rate a quote was last made from is kept in memory for its validity (ExchangeRates.recent); the
// quote's insert checks it is still the latest row, as the service would read it.
async function quotedRate(): Promise<number> {
  const response = await quote({ amountUsdc: 10 });
  assertStatus(response, 201);
  return (response.body as { exchangeRate: number }).exchangeRate;
}

test("a rate another instance fetched after the one in memory prices the next quote", async () => {
  assert.equal(await quotedRate(), 17.25);
  await service.pool.query("INSERT INTO exchange_rates (usd_mxn, source) VALUES (17.4, 'fallback_provider')");
  assert.equal(await quotedRate(), 17.4);
});

test("a rate deleted from the database is not used from memory: the next quote asks the central bank again", async () => {
  assert.equal(await quotedRate(), 17.25);
  await service.pool.query("DELETE FROM exchange_rates");
  service.simulators!.banxico.setRate("17.6000");
  assert.equal(await quotedRate(), 17.6);
});

test("a rate aged past its validity in the database is not used from memory: the next quote asks the central bank again", async () => {
  assert.equal(await quotedRate(), 17.25);
  await service.pool.query("UPDATE exchange_rates SET fetched_at = now() - interval '1 day'");
  service.simulators!.banxico.setRate("17.7000");
  assert.equal(await quotedRate(), 17.7);
});

test("a rate whose value was changed in the database prices the next quote at that value", async () => {
  assert.equal(await quotedRate(), 17.25);
  await service.pool.query("UPDATE exchange_rates SET usd_mxn = 17.8");
  assert.equal(await quotedRate(), 17.8);
});
