import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Tier user limits (decisions section 3): FREE 10, GROWTH 500, ENTERPRISE unlimited or its override.
let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function userCount(partnerId: string): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1", [partnerId]);
  return Number(rows[0]!.n);
}

function register(key: string, partnerUserRef: string) {
  return service.api("POST", "/users", { key, body: { partnerUserRef } });
}

test("a FREE partner registers 10 users and the 11th answers 403 USER_LIMIT_REACHED", async () => {
  const partner = await service.createPartner({ tier: "FREE" });
  for (let i = 1; i <= 10; i += 1) assertStatus(await register(partner.apiKey, `free-${i}`), 201);
  assertError(await register(partner.apiKey, "free-11"), 403, "USER_LIMIT_REACHED");
  assert.equal(await userCount(partner.id), 10);
});

test("concurrent registrations never take a FREE partner past 10 users", async () => {
  const partner = await service.createPartner({ tier: "FREE" });
  for (let i = 1; i <= 4; i += 1) assertStatus(await register(partner.apiKey, `seed-${i}`), 201);
  const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => register(partner.apiKey, `burst-${i}`)));
  const created = responses.filter((response) => response.status === 201);
  const refused = responses.filter((response) => response.status !== 201);
  assert.equal(created.length, 6);
  for (const response of refused) assertError(response, 403, "USER_LIMIT_REACHED");
  assert.equal(await userCount(partner.id), 10);
});

test("a GROWTH partner is not held to the FREE limit", async () => {
  const partner = await service.createPartner({ tier: "GROWTH" });
  for (let i = 1; i <= 11; i += 1) assertStatus(await register(partner.apiKey, `growth-${i}`), 201);
  assert.equal(await userCount(partner.id), 11);
});

test("an ENTERPRISE partner's maxUsers override is its limit", async () => {
  const partner = await service.createPartner({ tier: "ENTERPRISE", limits: { maxUsers: 2 } });
  assertStatus(await register(partner.apiKey, "ent-1"), 201);
  assertStatus(await register(partner.apiKey, "ent-2"), 201);
  assertError(await register(partner.apiKey, "ent-3"), 403, "USER_LIMIT_REACHED");
});

test("a partner moved down to FREE with 10 users cannot add another", async () => {
  const partner = await service.createPartner({ tier: "GROWTH" });
  for (let i = 1; i <= 10; i += 1) assertStatus(await register(partner.apiKey, `down-${i}`), 201);
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { tier: "FREE" }), 200);
  assertError(await register(partner.apiKey, "down-11"), 403, "USER_LIMIT_REACHED");
});
