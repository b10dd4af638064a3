import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// PATCH /admin/v1/partners/:id: status, kybStatus, tier, webhookUrl, ipAllowList, feeWallet, limits.
let service: TestService;
let production: TestService;

before(async () => {
  [service, production] = await Promise.all([startTestService(), startTestService({ WEBHOOK_ALLOW_PRIVATE: "false" })]);
});
after(() => Promise.all([service.close(), production.close()]));

const WALLET = "0x2222222222222222222222222222222222222222";

async function patched(changes: Record<string, unknown>, initial: Record<string, unknown> = {}) {
  const partner = await service.createPartner(initial);
  const response = await service.admin("PATCH", `/partners/${partner.id}`, changes);
  assertStatus(response, 200);
  const stored = await service.admin("GET", `/partners/${partner.id}`);
  return { partner, response: response.body, stored: stored.body };
}

const changes: [string, Record<string, unknown>, Record<string, unknown>][] = [
  ["status", { status: "INACTIVE" }, {}],
  ["kybStatus", { kybStatus: "SUSPENDED" }, {}],
  ["tier", { tier: "ENTERPRISE" }, { tier: "FREE" }],
  ["webhookUrl", { webhookUrl: "https://new.example.com/hook" }, { webhookUrl: "https://old.example.com/hook" }],
  ["webhookUrl cleared to null", { webhookUrl: null }, { webhookUrl: "https://old.example.com/hook" }],
  ["ipAllowList", { ipAllowList: ["198.51.100.0/24", "2001:db8::/32"] }, { ipAllowList: ["203.0.113.1"] }],
  ["ipAllowList emptied", { ipAllowList: [] }, { ipAllowList: ["203.0.113.1"] }],
  ["feeWallet", { feeWallet: WALLET }, {}],
  ["feeWallet cleared to null", { feeWallet: null }, { feeWallet: WALLET }],
  ["limits", { limits: { requestsPerMinute: 3000, dailyVolumeMxn: 500000 } }, { tier: "ENTERPRISE" }],
  ["name", { name: "Renamed" }, {}],
];
for (const [field, change, initial] of changes) {
  test(`PATCH sets ${field}, in the answer and in what GET shows afterwards`, async () => {
    const { response, stored } = await patched(change, initial);
    for (const [name, value] of Object.entries(change)) {
      assert.deepEqual(response[name], value);
      assert.deepEqual(stored[name], value);
    }
  });
}

test("PATCH leaves the fields it is not given unchanged and moves updatedAt", async () => {
  const partner = await service.createPartner({ name: "Keep", tier: "GROWTH", webhookUrl: "https://keep.example.com", ipAllowList: ["203.0.113.5"] });
  const before = await service.admin("GET", `/partners/${partner.id}`);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const response = await service.admin("PATCH", `/partners/${partner.id}`, { status: "INACTIVE" });
  assert.deepEqual({ ...response.body, status: undefined, updatedAt: undefined }, { ...before.body, status: undefined, updatedAt: undefined });
  assert.ok(Date.parse(String(response.body.updatedAt)) > Date.parse(String(before.body.updatedAt)));
});

test("a tier change takes effect on the partner API at once", async () => {
  const { partner } = await patched({ tier: "FREE" }, { tier: "GROWTH" });
  const health = await service.api("GET", "/health", { key: partner.apiKey });
  assert.equal(health.body.tier, "FREE");
  assert.equal(health.headers.get("X-RateLimit-Limit"), "50");
});

test("PATCH of an unknown partner answers 404 NOT_FOUND", async () => {
  assertError(await service.admin("PATCH", "/partners/ptn_000000000000000000000000", { status: "INACTIVE" }), 404, "NOT_FOUND");
});

test("an http webhook URL answers VALIDATION_ERROR when WEBHOOK_ALLOW_PRIVATE is false, and changes nothing", async () => {
  const partner = await production.createPartner({ webhookUrl: "https://hooks.example.com/a" });
  assertError(await production.admin("PATCH", `/partners/${partner.id}`, { webhookUrl: "http://hooks.example.com/a" }), 400, "VALIDATION_ERROR");
  assert.equal((await production.admin("GET", `/partners/${partner.id}`)).body.webhookUrl, "https://hooks.example.com/a");
});

const invalid: [string, Record<string, unknown>][] = [
  ["an empty body", {}],
  ["an unknown status", { status: "PAUSED" }],
  ["an unknown kybStatus", { kybStatus: "PENDING" }],
  ["an unknown tier", { tier: "GOLD" }],
  ["a bad CIDR range", { ipAllowList: ["192.168.0.0/40"] }],
  ["a bad fee wallet", { feeWallet: "0xnothex" }],
  ["an unknown field", { kycModel: "SERVICE_PROVIDED" }],
  ["a new API key in the body", { apiKey: "ofrk_0000000000000000000000000000000000000000000000000000000000000000" }],
];
for (const [what, body] of invalid) {
  test(`PATCH with ${what} answers 400 VALIDATION_ERROR and changes nothing`, async () => {
    const partner = await service.createPartner({ ipAllowList: ["203.0.113.9"] });
    const before = await service.pool.query("SELECT * FROM partners WHERE id = $1", [partner.id]);
    assertError(await service.admin("PATCH", `/partners/${partner.id}`, body), 400, "VALIDATION_ERROR");
    const afterwards = await service.pool.query("SELECT * FROM partners WHERE id = $1", [partner.id]);
    assert.deepEqual(afterwards.rows, before.rows);
  });
}
