import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ name: "Acme Pay", tier: "GROWTH" });
});
after(() => service.close());

test("a valid key answers GET /health with status ok, the partner's name, its tier and a timestamp", async () => {
  const response = await service.api("GET", "/health", { key: partner.apiKey });
  assertStatus(response, 200);
  assert.deepEqual(Object.keys(response.body).sort(), ["partner", "status", "tier", "timestamp"]);
  assert.equal(response.body.status, "ok");
  assert.equal(response.body.partner, "Acme Pay");
  assert.equal(response.body.tier, "GROWTH");
  assert.match(String(response.body.timestamp), ISO_MILLIS);
});

test("a request without the X-API-Key header answers 401 MISSING_API_KEY", async () => {
  assertError(await service.api("GET", "/health"), 401, "MISSING_API_KEY");
});

test("an empty X-API-Key header answers 401 MISSING_API_KEY", async () => {
  assertError(await service.api("GET", "/health", { key: "" }), 401, "MISSING_API_KEY");
});

test("a malformed key answers 401 INVALID_API_KEY", async () => {
  const hex = partner.apiKey.slice(5);
  const malformed = [
    "not-a-key",
    `ofrk_${hex.slice(1)}`, // 63 hex characters
    `ofrk_${hex}0`, // 65 hex characters
    `ofrk_${hex.toUpperCase()}`, // the hex must be lowercase
    `OFRK_${hex}`,
    `pk_live_${hex}`,
  ];
  for (const key of malformed) {
    assertError(await service.api("GET", "/health", { key }), 401, "INVALID_API_KEY");
  }
});

test("a well-formed key that belongs to no partner answers 401 INVALID_API_KEY", async () => {
  const unknown = `ofrk_${"0123456789abcdef".repeat(4)}`;
  assertError(await service.api("GET", "/health", { key: unknown }), 401, "INVALID_API_KEY");
});

test("a partner's key changed in its last character answers 401 INVALID_API_KEY", async () => {
  const last = partner.apiKey.at(-1) === "0" ? "1" : "0";
  const altered = partner.apiKey.slice(0, -1) + last;
  assertError(await service.api("GET", "/health", { key: altered }), 401, "INVALID_API_KEY");
});

test("after a key rotation the old key answers 401 INVALID_API_KEY at once and the new key works", async () => {
  const rotating = await service.createPartner({ name: "Rotating" });
  assertStatus(await service.api("GET", "/health", { key: rotating.apiKey }), 200);

  const rotated = await service.admin<{ apiKey: string }>("POST", `/partners/${rotating.id}/api-keys`);
  assertStatus(rotated, 201);

  assertError(await service.api("GET", "/health", { key: rotating.apiKey }), 401, "INVALID_API_KEY");
  const withNewKey = await service.api("GET", "/health", { key: rotated.body.apiKey });
  assertStatus(withNewKey, 200);
  assert.equal(withNewKey.body.partner, "Rotating");
});

test("only the SHA-256 hash of the key is stored, never the key", async () => {
  const { rows } = await service.pool.query<Record<string, unknown>>("SELECT * FROM partners WHERE id = $1", [partner.id]);
  const row = rows[0]!;
  assert.deepEqual(row.api_key_hash, createHash("sha256").update(partner.apiKey).digest());
  const stored = JSON.stringify(row, (_key, value: unknown) => (Buffer.isBuffer(value) ? value.toString("hex") : value));
  assert.ok(!stored.includes(partner.apiKey.slice(5)), "the key's hex is stored in clear");
});
