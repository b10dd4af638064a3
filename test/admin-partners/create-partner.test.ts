import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// POST /admin/v1/partners (decisions section 12): 201 with the partner's fields and, beside them at the
// top level, `apiKey` (ofrk_ + 64 hex) and `webhookSecret` (whsec_ + 64 hex), shown this once.
let service: TestService;
let production: TestService;

before(async () => {
  [service, production] = await Promise.all([startTestService(), startTestService({ WEBHOOK_ALLOW_PRIVATE: "false" })]);
});
after(() => Promise.all([service.close(), production.close()]));

const WALLET = "0x1111111111111111111111111111111111111111";

async function partnerCount(on = service): Promise<number> {
  const { rows } = await on.pool.query<{ n: string }>("SELECT count(*) AS n FROM partners");
  return Number(rows[0]!.n);
}

test("a created partner answers 201 with its fields and, at the top level, apiKey and webhookSecret", async () => {
  const response = await service.admin("POST", "/partners", {
    name: "Remesas MX",
    tier: "GROWTH",
    kycModel: "SERVICE_PROVIDED",
    webhookUrl: "https://hooks.example.com/offramp",
    ipAllowList: ["203.0.113.0/24", "2001:db8::1"],
    feeWallet: WALLET,
  });
  assertStatus(response, 201);
  const body = response.body;
  assert.match(String(body.id), /^ptn_[0-9a-f]+$/);
  assert.match(String(body.apiKey), /^ofrk_[0-9a-f]{64}$/);
  assert.match(String(body.webhookSecret), /^whsec_[0-9a-f]{64}$/);
  assert.equal(body.name, "Remesas MX");
  assert.equal(body.tier, "GROWTH");
  assert.equal(body.kycModel, "SERVICE_PROVIDED");
  assert.equal(body.status, "ACTIVE");
  assert.equal(body.kybStatus, "APPROVED");
  assert.equal(body.webhookUrl, "https://hooks.example.com/offramp");
  assert.deepEqual(body.ipAllowList, ["203.0.113.0/24", "2001:db8::1"]);
  assert.equal(body.feeWallet, WALLET);
  assert.match(String(body.createdAt), ISO_MILLIS);
});

test("the created key works on the partner API at once", async () => {
  const created = await service.admin<{ apiKey: string }>("POST", "/partners", { name: "Works", tier: "FREE", kycModel: "PARTNER_MANAGED" });
  const health = await service.api("GET", "/health", { key: created.body.apiKey });
  assertStatus(health, 200);
  assert.equal(health.body.partner, "Works");
  assert.equal(health.body.tier, "FREE");
});

test("the webhook secret is stored for signing and the key only as its hash", async () => {
  const created = await service.admin<{ id: string; apiKey: string; webhookSecret: string }>("POST", "/partners", { name: "Stored", tier: "FREE", kycModel: "PARTNER_MANAGED" });
  const { rows } = await service.pool.query<{ webhook_secret: string; api_key_hash: Buffer }>("SELECT webhook_secret, api_key_hash FROM partners WHERE id = $1", [created.body.id]);
  assert.equal(rows[0]!.webhook_secret, created.body.webhookSecret);
  assert.deepEqual(rows[0]!.api_key_hash, createHash("sha256").update(created.body.apiKey).digest());
});

test("every partner gets its own key and secret", async () => {
  const one = await service.createPartner();
  const two = await service.createPartner();
  assert.notEqual(one.apiKey, two.apiKey);
  assert.notEqual(one.webhookSecret, two.webhookSecret);
});

test("an ENTERPRISE partner is created with its limit overrides in force", async () => {
  const response = await service.admin("POST", "/partners", {
    name: "Big",
    tier: "ENTERPRISE",
    kycModel: "PARTNER_MANAGED",
    limits: { requestsPerMinute: 5000, monthlyVolumeMxn: 9000000, maxUsers: null },
  });
  assertStatus(response, 201);
  assert.deepEqual(response.body.limits, { requestsPerMinute: 5000, monthlyVolumeMxn: 9000000, maxUsers: null });
  const health = await service.api("GET", "/health", { key: String(response.body.apiKey) });
  assert.equal(health.headers.get("X-RateLimit-Limit"), "5000");
});

test("an https webhook URL is accepted when private webhook URLs are not allowed", async () => {
  assertStatus(await production.admin("POST", "/partners", { name: "Secure", tier: "FREE", kycModel: "PARTNER_MANAGED", webhookUrl: "https://hooks.example.com/x" }), 201);
});

test("an http webhook URL answers VALIDATION_ERROR when WEBHOOK_ALLOW_PRIVATE is false, and creates nothing", async () => {
  const before = await partnerCount(production);
  const response = await production.admin("POST", "/partners", { name: "Plain", tier: "FREE", kycModel: "PARTNER_MANAGED", webhookUrl: "http://hooks.example.com/x" });
  assertError(response, 400, "VALIDATION_ERROR");
  assert.equal(await partnerCount(production), before);
});

const valid = { name: "Valid", tier: "FREE", kycModel: "PARTNER_MANAGED" };
const invalid: [string, Record<string, unknown>][] = [
  ["a missing name", { tier: "FREE", kycModel: "PARTNER_MANAGED" }],
  ["a missing tier", { name: "N", kycModel: "PARTNER_MANAGED" }],
  ["a missing kycModel", { name: "N", tier: "FREE" }],
  ["an empty name", { ...valid, name: "" }],
  ["an unknown tier", { ...valid, tier: "PLATINUM" }],
  ["an unknown kycModel", { ...valid, kycModel: "SELF" }],
  ["a CIDR range with a 33-bit prefix", { ...valid, ipAllowList: ["10.0.0.0/33"] }],
  ["an IPv6 range with a 129-bit prefix", { ...valid, ipAllowList: ["2001:db8::/129"] }],
  ["a three-part IPv4 range", { ...valid, ipAllowList: ["10.0.0/8"] }],
  ["a bare number as an address", { ...valid, ipAllowList: ["10"] }],
  ["a host name in the allow-list", { ...valid, ipAllowList: ["example.com"] }],
  ["an allow-list that is not an array", { ...valid, ipAllowList: "10.0.0.1" }],
  ["a fee wallet without 0x", { ...valid, feeWallet: "1111111111111111111111111111111111111111" }],
  ["a fee wallet one byte short", { ...valid, feeWallet: "0x11111111111111111111111111111111111111" }],
  ["a fee wallet with non-hex characters", { ...valid, feeWallet: "0x111111111111111111111111111111111111111g" }],
  ["a webhook URL that is not a URL", { ...valid, webhookUrl: "hooks.example.com" }],
  ["a webhook URL with credentials", { ...valid, webhookUrl: "https://user:pass@hooks.example.com/x" }],
  ["an unknown field", { ...valid, apiKey: "ofrk_mine" }],
  ["an unknown limit", { ...valid, tier: "ENTERPRISE", limits: { burst: 5 } }],
];
for (const [what, body] of invalid) {
  test(`a partner with ${what} answers 400 VALIDATION_ERROR and creates nothing`, async () => {
    const before = await partnerCount();
    assertError(await service.admin("POST", "/partners", body), 400, "VALIDATION_ERROR");
    assert.equal(await partnerCount(), before);
  });
}
