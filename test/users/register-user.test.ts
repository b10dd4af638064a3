import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { withinOrWaiting } from "../support/until.ts";

const CREATE_FIELDS = ["createdAt", "id", "kycStatus", "kycTier", "orderCount", "partnerUserRef", "totalVolumeMxn"];

let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ kycModel: "PARTNER_MANAGED" });
});
after(() => service.close());

async function userCount(partnerId: string): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1", [partnerId]);
  return Number(rows[0]!.n);
}

function register(body: unknown, key = partner.apiKey) {
  return service.api("POST", "/users", { key, body });
}

test("a new user answers 201 with exactly the create-response fields, NOT_REQUIRED and NONE", async () => {
  const before = Date.now();
  const response = await register({ partnerUserRef: "user-plain" });
  assertStatus(response, 201);
  assert.deepEqual(Object.keys(response.body).sort(), CREATE_FIELDS);
  assert.match(String(response.body.id), /^usr_[0-9a-f]+$/);
  assert.equal(response.body.partnerUserRef, "user-plain");
  assert.equal(response.body.kycStatus, "NOT_REQUIRED");
  assert.equal(response.body.kycTier, "NONE");
  assert.equal(response.body.orderCount, 0);
  assert.equal(response.body.totalVolumeMxn, 0);
  assert.match(String(response.body.createdAt), ISO_MILLIS);
  const createdAt = Date.parse(String(response.body.createdAt));
  assert.ok(createdAt >= before - 1000 && createdAt <= Date.now() + 1000);
});

test("the email is kept but echoed in neither the create response nor the detail", async () => {
  const created = await register({ partnerUserRef: "user-email", email: "ana@example.com" });
  assertStatus(created, 201);
  assert.ok(!JSON.stringify(created.body).includes("ana@example.com"));
  assert.ok(!("email" in created.body));
  const detail = await service.api("GET", "/users/user-email", { key: partner.apiKey });
  assert.ok(!JSON.stringify(detail.body).includes("ana@example.com"));
  const { rows } = await service.pool.query<{ email: string }>("SELECT email FROM users WHERE id = $1", [created.body.id]);
  assert.equal(rows[0]!.email, "ana@example.com");
});

for (const level of ["BASIC", "FULL"] as const) {
  test(`an attestation of ${level} creates the user APPROVED with tier ${level} and kycCompletedAt = verifiedAt`, async () => {
    const verifiedAt = "2026-01-15T10:20:30.456Z";
    const ref = `attested-${level}`;
    const created = await register({ partnerUserRef: ref, kycAttestation: { level, verifiedAt } });
    assertStatus(created, 201);
    assert.deepEqual(Object.keys(created.body).sort(), CREATE_FIELDS);
    assert.equal(created.body.kycStatus, "APPROVED");
    assert.equal(created.body.kycTier, level);
    const detail = await service.api("GET", `/users/${ref}`, { key: partner.apiKey });
    assert.equal(detail.body.kycCompletedAt, verifiedAt);
  });
}

test("an attestation from a SERVICE_PROVIDED partner answers 400 KYC_NOT_AVAILABLE and creates no user", async () => {
  const provided = await service.createPartner({ kycModel: "SERVICE_PROVIDED" });
  const response = await register({ partnerUserRef: "needs-provider", kycAttestation: { level: "BASIC", verifiedAt: new Date().toISOString() } }, provided.apiKey);
  assertError(response, 400, "KYC_NOT_AVAILABLE");
  assert.equal(await userCount(provided.id), 0);
});

test("a SERVICE_PROVIDED partner registers users without an attestation", async () => {
  const provided = await service.createPartner({ kycModel: "SERVICE_PROVIDED" });
  const response = await register({ partnerUserRef: "plain" }, provided.apiKey);
  assertStatus(response, 201);
  assert.equal(response.body.kycStatus, "NOT_REQUIRED");
});

test("an attestation verified in the future answers VALIDATION_ERROR and creates no user", async () => {
  const fresh = await service.createPartner();
  const verifiedAt = new Date(Date.now() + 3_600_000).toISOString();
  assertError(await register({ partnerUserRef: "from-future", kycAttestation: { level: "FULL", verifiedAt } }, fresh.apiKey), 400, "VALIDATION_ERROR");
  assert.equal(await userCount(fresh.id), 0);
});

test("a partnerUserRef already registered answers 409 DUPLICATE_USER and leaves the user unchanged", async () => {
  const first = await register({ partnerUserRef: "user-dup" });
  assertStatus(first, 201);
  const again = await register({ partnerUserRef: "user-dup", kycAttestation: { level: "FULL", verifiedAt: new Date().toISOString() } });
  assertError(again, 409, "DUPLICATE_USER");
  const detail = await service.api("GET", "/users/user-dup", { key: partner.apiKey });
  assert.equal(detail.body.id, first.body.id);
  assert.equal(detail.body.kycTier, "NONE");
});

test("a partnerUserRef of exactly 255 characters is accepted", async () => {
  const ref = "r".repeat(255);
  const response = await register({ partnerUserRef: ref });
  assertStatus(response, 201);
  assert.equal(response.body.partnerUserRef, ref);
});

test("concurrent registrations of one partnerUserRef create it once; the others answer DUPLICATE_USER", async () => {
  const racer = await service.createPartner();
  const responses = await Promise.all(Array.from({ length: 8 }, () => register({ partnerUserRef: "racing" }, racer.apiKey)));
  const statuses = responses.map((response) => response.status).sort();
  assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const response of responses.filter((r) => r.status === 409)) assertError(response, 409, "DUPLICATE_USER");
  assert.equal(await userCount(racer.id), 1);
});

test("an ENTERPRISE partner's concurrent registrations of one partnerUserRef create it once; the others answer DUPLICATE_USER", async () => {
  const racer = await service.createPartner({ tier: "ENTERPRISE" });
  const responses = await Promise.all(Array.from({ length: 8 }, () => register({ partnerUserRef: "racing" }, racer.apiKey)));
  assert.deepEqual(responses.map((response) => response.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const response of responses.filter((r) => r.status === 409)) assertError(response, 409, "DUPLICATE_USER");
  assert.equal(await userCount(racer.id), 1);
});

test("without a user limit (ENTERPRISE) a registration does not wait for the partner's row, which a limited registration or order holds", async () => {
  const unlimited = await service.createPartner({ tier: "ENTERPRISE" });
  const holder = await service.pool.connect();
  try {
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM partners WHERE id = $1 FOR NO KEY UPDATE", [unlimited.id]);
    const registered = register({ partnerUserRef: "while-held" }, unlimited.apiKey);
    const outcome = await withinOrWaiting(registered);
    assert.notEqual(outcome, "waiting", "the registration waited for the partner's row");
    assertStatus(outcome as Awaited<typeof registered>, 201);
  } finally {
    await holder.query("ROLLBACK");
    holder.release();
  }
});

const invalidBodies: [string, unknown][] = [
  ["a body without partnerUserRef", { email: "a@example.com" }],
  ["an empty partnerUserRef", { partnerUserRef: "" }],
  ["a partnerUserRef of 256 characters", { partnerUserRef: "r".repeat(256) }],
  ["a partnerUserRef that is not a string", { partnerUserRef: 12345 }],
  ["an unknown field", { partnerUserRef: "u-unknown", nickname: "x" }],
  ["a malformed email", { partnerUserRef: "u-bad-email", email: "not-an-email" }],
  ["an attestation with an unknown level", { partnerUserRef: "u-level", kycAttestation: { level: "GOLD", verifiedAt: "2026-01-01T00:00:00.000Z" } }],
  ["an attestation without verifiedAt", { partnerUserRef: "u-no-date", kycAttestation: { level: "BASIC" } }],
  ["an attestation without level", { partnerUserRef: "u-no-level", kycAttestation: { verifiedAt: "2026-01-01T00:00:00.000Z" } }],
  ["an attestation whose verifiedAt is not a timestamp", { partnerUserRef: "u-bad-date", kycAttestation: { level: "BASIC", verifiedAt: "yesterday" } }],
  ["an attestation with an unknown field", { partnerUserRef: "u-extra", kycAttestation: { level: "BASIC", verifiedAt: "2026-01-01T00:00:00.000Z", by: "x" } }],
];
for (const [what, body] of invalidBodies) {
  test(`${what} answers 400 VALIDATION_ERROR and creates no user`, async () => {
    const fresh = await service.createPartner();
    assertError(await register(body, fresh.apiKey), 400, "VALIDATION_ERROR");
    assert.equal(await userCount(fresh.id), 0);
  });
}
