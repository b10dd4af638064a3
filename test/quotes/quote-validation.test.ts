import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Every invalid quote request answers 400 VALIDATION_ERROR and creates no quote (decisions sections 2 and 5).
let service: TestService;
let key: string;

before(async () => {
  service = await startTestService();
  key = (await service.createPartner({ tier: "ENTERPRISE" })).apiKey;
  assertStatus(await service.api("POST", "/users", { key, body: { partnerUserRef: "seller" } }), 201);
});
after(() => service.close());

async function quoteCount(): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM quotes");
  return Number(rows[0]!.n);
}

const valid = { type: "SELL", amountUsdc: 100, partnerUserRef: "seller" };
const without = (field: keyof typeof valid) => Object.fromEntries(Object.entries(valid).filter(([name]) => name !== field));

// Written as raw JSON where the decimals must reach the service exactly as typed.
const invalid: [string, string][] = [
  ["a missing type", JSON.stringify(without("type"))],
  ["a missing amountUsdc", JSON.stringify(without("amountUsdc"))],
  ["a missing partnerUserRef", JSON.stringify(without("partnerUserRef"))],
  ["type BUY", JSON.stringify({ ...valid, type: "BUY" })],
  ["type sell in lower case", JSON.stringify({ ...valid, type: "sell" })],
  ["amountUsdc with 7 decimals", '{"type":"SELL","amountUsdc":1.1234567,"partnerUserRef":"seller"}'],
  ["amountUsdc of 0.0000001", '{"type":"SELL","amountUsdc":0.0000001,"partnerUserRef":"seller"}'],
  ["amountUsdc 0", JSON.stringify({ ...valid, amountUsdc: 0 })],
  ["a negative amountUsdc", JSON.stringify({ ...valid, amountUsdc: -5 })],
  ["amountUsdc above 1,000,000", '{"type":"SELL","amountUsdc":1000000.000001,"partnerUserRef":"seller"}'],
  ["amountUsdc as a string", JSON.stringify({ ...valid, amountUsdc: "100" })],
  ["feePercent above 10", JSON.stringify({ ...valid, feePercent: 10.01, feeRecipient: "PARTNER" })],
  ["feePercent with 3 decimals", '{"type":"SELL","amountUsdc":100,"partnerUserRef":"seller","feePercent":1.125,"feeRecipient":"PARTNER"}'],
  ["a negative feePercent", JSON.stringify({ ...valid, feePercent: -1, feeRecipient: "PARTNER" })],
  ["feePercent above 0 with feeRecipient NONE", JSON.stringify({ ...valid, feePercent: 1, feeRecipient: "NONE" })],
  ["feePercent above 0 without feeRecipient (NONE by default)", JSON.stringify({ ...valid, feePercent: 0.5 })],
  ["an unknown feeRecipient", JSON.stringify({ ...valid, feePercent: 1, feeRecipient: "BANK" })],
  ["a partnerUserRef over 255 characters", JSON.stringify({ ...valid, partnerUserRef: "s".repeat(256) })],
  ["an unknown field", JSON.stringify({ ...valid, currency: "MXN" })],
];
for (const [what, rawBody] of invalid) {
  test(`a quote with ${what} answers 400 VALIDATION_ERROR and creates no quote`, async () => {
    const before = await quoteCount();
    assertError(await service.api("POST", "/quotes", { key, rawBody }), 400, "VALIDATION_ERROR");
    assert.equal(await quoteCount(), before);
  });
}

const boundaries: [string, string, Record<string, number>][] = [
  ["amountUsdc of exactly 1,000,000", '{"type":"SELL","amountUsdc":1000000,"partnerUserRef":"seller"}', { amountUsdc: 1_000_000 }],
  ["amountUsdc of 0.000001 (6 decimals)", '{"type":"SELL","amountUsdc":0.000001,"partnerUserRef":"seller"}', { amountUsdc: 0.000001 }],
  ["feePercent of exactly 10", '{"type":"SELL","amountUsdc":1,"partnerUserRef":"seller","feePercent":10,"feeRecipient":"USER"}', { feePercent: 10 }],
  ["feePercent 0.29 (2 decimals)", '{"type":"SELL","amountUsdc":1,"partnerUserRef":"seller","feePercent":0.29,"feeRecipient":"USER"}', { feePercent: 0.29 }],
];
for (const [what, rawBody, expected] of boundaries) {
  test(`a quote with ${what} is accepted`, async () => {
    const response = await service.api("POST", "/quotes", { key, rawBody });
    assertStatus(response, 201);
    for (const [field, value] of Object.entries(expected)) assert.equal(response.body[field], value);
  });
}
