import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// POST /admin/v1/partners/:id/api-keys (new key, the old one stops at once) and /webhook-secret.
let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

test("rotating the key answers 201 with a new ofrk_ key and the partner's fields", async () => {
  const partner = await service.createPartner({ name: "Rotator" });
  const response = await service.admin("POST", `/partners/${partner.id}/api-keys`);
  assertStatus(response, 201);
  assert.match(String(response.body.apiKey), /^ofrk_[0-9a-f]{64}$/);
  assert.notEqual(response.body.apiKey, partner.apiKey);
  assert.equal(response.body.id, partner.id);
  assert.equal(response.body.name, "Rotator");
  assert.equal(response.body.webhookSecret, undefined);
});

test("after a rotation the old key answers INVALID_API_KEY at once and the new one works", async () => {
  const partner = await service.createPartner();
  const rotated = await service.admin<{ apiKey: string }>("POST", `/partners/${partner.id}/api-keys`);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 401, "INVALID_API_KEY");
  assertStatus(await service.api("GET", "/health", { key: rotated.body.apiKey }), 200);
});

test("the shown key prefix follows the rotation", async () => {
  const partner = await service.createPartner();
  const rotated = await service.admin<{ apiKey: string }>("POST", `/partners/${partner.id}/api-keys`);
  const shown = await service.admin("GET", `/partners/${partner.id}`);
  assert.ok(rotated.body.apiKey.startsWith(String(shown.body.apiKeyPrefix)));
  assert.ok(!partner.apiKey.startsWith(String(shown.body.apiKeyPrefix)));
});

test("a new webhook secret answers 201 with a new whsec_ secret that is stored for signing", async () => {
  const partner = await service.createPartner();
  const response = await service.admin("POST", `/partners/${partner.id}/webhook-secret`);
  assertStatus(response, 201);
  assert.match(String(response.body.webhookSecret), /^whsec_[0-9a-f]{64}$/);
  assert.notEqual(response.body.webhookSecret, partner.webhookSecret);
  assert.equal(response.body.apiKey, undefined);
  const { rows } = await service.pool.query<{ webhook_secret: string }>("SELECT webhook_secret FROM partners WHERE id = $1", [partner.id]);
  assert.equal(rows[0]!.webhook_secret, response.body.webhookSecret);
});

test("a new webhook secret leaves the API key working", async () => {
  const partner = await service.createPartner();
  assertStatus(await service.admin("POST", `/partners/${partner.id}/webhook-secret`), 201);
  assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
});

test("rotating the key of an unknown partner answers 404 NOT_FOUND", async () => {
  assertError(await service.admin("POST", "/partners/ptn_000000000000000000000000/api-keys"), 404, "NOT_FOUND");
});

test("a new webhook secret for an unknown partner answers 404 NOT_FOUND", async () => {
  assertError(await service.admin("POST", "/partners/ptn_000000000000000000000000/webhook-secret"), 404, "NOT_FOUND");
});
