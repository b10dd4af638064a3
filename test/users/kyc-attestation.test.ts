import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// POST /users/:ref/kyc-attestation (decisions section 4): upgrades an existing user of a PARTNER_MANAGED
// partner; kycTier is the highest level ever approved, kycCompletedAt the time of that approval.
let service: TestService;
let partner: { id: string; apiKey: string };
let refs = 0;

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ kycModel: "PARTNER_MANAGED" });
});
after(() => service.close());

async function newUser(): Promise<string> {
  refs += 1;
  const ref = `kyc-user-${refs}`;
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: ref } }), 201);
  return ref;
}

function attest(ref: string, level: string, verifiedAt: string, key = partner.apiKey) {
  return service.api("POST", `/users/${ref}/kyc-attestation`, { key, body: { level, verifiedAt } });
}

test("attesting BASIC answers 200 with the user detail, APPROVED with tier BASIC", async () => {
  const ref = await newUser();
  const response = await attest(ref, "BASIC", "2026-03-01T12:00:00.000Z");
  assertStatus(response, 200);
  assert.equal(response.body.partnerUserRef, ref);
  assert.equal(response.body.kycStatus, "APPROVED");
  assert.equal(response.body.kycTier, "BASIC");
  assert.equal(response.body.kycCompletedAt, "2026-03-01T12:00:00.000Z");
  assert.ok("monthlyVolumeMxn" in response.body && "isSanctioned" in response.body, "detail fields");
});

test("attesting FULL after BASIC upgrades the tier to FULL and moves kycCompletedAt", async () => {
  const ref = await newUser();
  assertStatus(await attest(ref, "BASIC", "2026-03-01T12:00:00.000Z"), 200);
  const upgraded = await attest(ref, "FULL", "2026-04-01T12:00:00.000Z");
  assertStatus(upgraded, 200);
  assert.equal(upgraded.body.kycTier, "FULL");
  assert.equal(upgraded.body.kycCompletedAt, "2026-04-01T12:00:00.000Z");
});

test("attesting BASIC after FULL keeps the highest tier, FULL, and its kycCompletedAt", async () => {
  const ref = await newUser();
  assertStatus(await attest(ref, "FULL", "2026-04-01T12:00:00.000Z"), 200);
  const lower = await attest(ref, "BASIC", "2026-05-01T12:00:00.000Z");
  assertStatus(lower, 200);
  assert.equal(lower.body.kycStatus, "APPROVED");
  assert.equal(lower.body.kycTier, "FULL");
  assert.equal(lower.body.kycCompletedAt, "2026-04-01T12:00:00.000Z");
});

test("the attestation is what GET /users/:ref shows afterwards", async () => {
  const ref = await newUser();
  await attest(ref, "FULL", "2026-04-02T08:00:00.000Z");
  const detail = await service.api("GET", `/users/${ref}`, { key: partner.apiKey });
  assert.equal(detail.body.kycStatus, "APPROVED");
  assert.equal(detail.body.kycTier, "FULL");
  assert.equal(detail.body.kycCompletedAt, "2026-04-02T08:00:00.000Z");
});

test("an attestation verified in the future answers VALIDATION_ERROR and changes nothing", async () => {
  const ref = await newUser();
  assertError(await attest(ref, "FULL", new Date(Date.now() + 3_600_000).toISOString()), 400, "VALIDATION_ERROR");
  const detail = await service.api("GET", `/users/${ref}`, { key: partner.apiKey });
  assert.equal(detail.body.kycTier, "NONE");
  assert.equal(detail.body.kycStatus, "NOT_REQUIRED");
});

test("an attestation for an unknown user answers 404 NOT_FOUND", async () => {
  assertError(await attest("nobody", "BASIC", "2026-03-01T12:00:00.000Z"), 404, "NOT_FOUND");
});

test("a SERVICE_PROVIDED partner's attestation answers 400 KYC_NOT_AVAILABLE and changes nothing", async () => {
  const provided = await service.createPartner({ kycModel: "SERVICE_PROVIDED" });
  assertStatus(await service.api("POST", "/users", { key: provided.apiKey, body: { partnerUserRef: "sp-user" } }), 201);
  assertError(await attest("sp-user", "BASIC", "2026-03-01T12:00:00.000Z", provided.apiKey), 400, "KYC_NOT_AVAILABLE");
  const detail = await service.api("GET", "/users/sp-user", { key: provided.apiKey });
  assert.equal(detail.body.kycTier, "NONE");
});

const invalid: [string, unknown][] = [
  ["a missing level", { verifiedAt: "2026-03-01T12:00:00.000Z" }],
  ["a missing verifiedAt", { level: "BASIC" }],
  ["an unknown level", { level: "NONE", verifiedAt: "2026-03-01T12:00:00.000Z" }],
  ["a verifiedAt that is not a timestamp", { level: "BASIC", verifiedAt: "March 1st" }],
  ["an unknown field", { level: "BASIC", verifiedAt: "2026-03-01T12:00:00.000Z", note: "x" }],
];
for (const [what, body] of invalid) {
  test(`an attestation with ${what} answers VALIDATION_ERROR and changes nothing`, async () => {
    const ref = await newUser();
    assertError(await service.api("POST", `/users/${ref}/kyc-attestation`, { key: partner.apiKey, body }), 400, "VALIDATION_ERROR");
    const detail = await service.api("GET", `/users/${ref}`, { key: partner.apiKey });
    assert.equal(detail.body.kycStatus, "NOT_REQUIRED");
  });
}
