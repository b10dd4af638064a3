import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  partner = await service.createPartner();
});
after(() => service.close());

test("GET /users/:ref answers every detail field of a new user", async () => {
  const created = await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "detail-1", email: "x@example.com" } });
  assertStatus(created, 201);
  const detail = await service.api("GET", "/users/detail-1", { key: partner.apiKey });
  assertStatus(detail, 200);
  assert.deepEqual(Object.keys(detail.body).sort(), [
    "amlRiskLevel",
    "createdAt",
    "id",
    "isPep",
    "isSanctioned",
    "kycCompletedAt",
    "kycStatus",
    "kycTier",
    "monthlyVolumeMxn",
    "orderCount",
    "partnerUserRef",
    "totalVolumeMxn",
    "updatedAt",
  ]);
  assert.deepEqual(
    { ...detail.body, createdAt: undefined, updatedAt: undefined },
    {
      id: created.body.id,
      partnerUserRef: "detail-1",
      kycStatus: "NOT_REQUIRED",
      kycTier: "NONE",
      orderCount: 0,
      totalVolumeMxn: 0,
      createdAt: undefined,
      kycCompletedAt: null,
      monthlyVolumeMxn: 0,
      amlRiskLevel: null,
      isPep: false,
      isSanctioned: false,
      updatedAt: undefined,
    },
  );
  assert.equal(detail.body.createdAt, created.body.createdAt);
  assert.match(String(detail.body.updatedAt), ISO_MILLIS);
});

test("an unknown partnerUserRef answers 404 NOT_FOUND", async () => {
  assertError(await service.api("GET", "/users/nobody-here", { key: partner.apiKey }), 404, "NOT_FOUND");
});

test("a partnerUserRef with reserved URL characters is found when percent-encoded", async () => {
  const ref = "ana/maría?x=1#y";
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: ref } }), 201);
  const detail = await service.api("GET", `/users/${encodeURIComponent(ref)}`, { key: partner.apiKey });
  assertStatus(detail, 200);
  assert.equal(detail.body.partnerUserRef, ref);
});
