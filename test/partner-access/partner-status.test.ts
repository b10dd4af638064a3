import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

test("an INACTIVE partner answers 403 PARTNER_INACTIVE", async () => {
  const partner = await service.createPartner();
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { status: "INACTIVE" }), 200);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
});

test("an INACTIVE partner cannot register users: PARTNER_INACTIVE and no user is created", async () => {
  const partner = await service.createPartner();
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { status: "INACTIVE" }), 200);
  const response = await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "u-1" } });
  assertError(response, 403, "PARTNER_INACTIVE");
  const { rows } = await service.pool.query("SELECT 1 FROM users WHERE partner_id = $1", [partner.id]);
  assert.equal(rows.length, 0);
});

test("a partner whose KYB status is SUSPENDED answers 403 PARTNER_SUSPENDED", async () => {
  const partner = await service.createPartner();
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { kybStatus: "SUSPENDED" }), 200);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_SUSPENDED");
});

test("a reactivated partner is served again", async () => {
  const partner = await service.createPartner();
  await service.admin("PATCH", `/partners/${partner.id}`, { status: "INACTIVE" });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { status: "ACTIVE" }), 200);
  assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
});

test("a partner whose KYB is approved again is served again", async () => {
  const partner = await service.createPartner();
  await service.admin("PATCH", `/partners/${partner.id}`, { kybStatus: "SUSPENDED" });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_SUSPENDED");
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { kybStatus: "APPROVED" }), 200);
  assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
});
