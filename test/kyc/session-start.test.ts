// POST /users/:ref/kyc: the session, the user's PENDING status, and every error of the spec in its order.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { checkReturnUrl } from "../../src/kyc/routes.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { assertError, createUser, RETURN_URL, requestSession, servicePartner, usage, userDetail } from "./helpers.ts";

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

describe("POST /users/:ref/kyc", () => {
  test("answers 201 with the provider's sessionId and the hosted page's sessionUrl", async () => {
    const { key } = await servicePartner(service);
    const ref = await createUser(service, key);
    const response = await requestSession(service, key, ref, { level: "FULL", returnUrl: RETURN_URL });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    assert.deepEqual(Object.keys(response.body).sort(), ["sessionId", "sessionUrl"]);
    assert.ok(response.body.sessionUrl.startsWith(`${service.baseUrl}/simulators/kyc/v/`));
    const page = await fetch(response.body.sessionUrl);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<span class="level" id="level">FULL<\/span>/);
  });

  test("starting a session sets the user PENDING", async () => {
    const { key } = await servicePartner(service);
    const ref = await createUser(service, key);
    assert.equal((await userDetail(service, key, ref)).kycStatus, "NOT_REQUIRED");
    await requestSession(service, key, ref);
    const user = await userDetail(service, key, ref);
    assert.equal(user.kycStatus, "PENDING");
    assert.equal(user.kycTier, "NONE");
  });

  test("a repeat with the same Idempotency-Key returns the first session and starts no other", async () => {
    const { id, key } = await servicePartner(service);
    const ref = await createUser(service, key);
    const headers = { "Idempotency-Key": "kyc-start-1" };
    const first = await requestSession(service, key, ref, undefined, headers);
    const second = await requestSession(service, key, ref, undefined, headers);
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.deepEqual(second.body, first.body);
    assert.equal((await usage(service, id)).counts.total, 1);
  });

  test("a PARTNER_MANAGED partner gets KYC_NOT_AVAILABLE (400)", async () => {
    const partner = await service.createPartner({ kycModel: "PARTNER_MANAGED" });
    const ref = await createUser(service, partner.apiKey);
    assertError(await requestSession(service, partner.apiKey, ref), 400, "KYC_NOT_AVAILABLE");
    assert.equal((await userDetail(service, partner.apiKey, ref)).kycStatus, "NOT_REQUIRED");
  });

  test("KYC_NOT_AVAILABLE comes before VALIDATION_ERROR and NOT_FOUND", async () => {
    const partner = await service.createPartner({ kycModel: "PARTNER_MANAGED" });
    assertError(await requestSession(service, partner.apiKey, "nobody", { level: "GOLD" }), 400, "KYC_NOT_AVAILABLE");
  });

  const invalidBodies: [string, unknown][] = [
    ["a missing level", { returnUrl: RETURN_URL }],
    ["a missing returnUrl", { level: "BASIC" }],
    ["a level that is neither BASIC nor FULL", { level: "GOLD", returnUrl: RETURN_URL }],
    ["a relative returnUrl", { level: "BASIC", returnUrl: "/kyc/done" }],
    ["a returnUrl that is not http(s)", { level: "BASIC", returnUrl: "javascript:alert(1)" }],
    ["a returnUrl that is not a string", { level: "BASIC", returnUrl: 42 }],
    ["an unknown field", { level: "BASIC", returnUrl: RETURN_URL, email: "a@b.example" }],
  ];
  for (const [what, body] of invalidBodies) {
    test(`${what} is VALIDATION_ERROR and changes nothing`, async () => {
      const { id, key } = await servicePartner(service);
      const ref = await createUser(service, key);
      const before = await userDetail(service, key, ref);
      assertError(await requestSession(service, key, ref, body), 400, "VALIDATION_ERROR");
      assert.deepEqual(await userDetail(service, key, ref), before);
      assert.equal((await usage(service, id)).counts.total, 0);
    });
  }

  test("a body that is not JSON is VALIDATION_ERROR", async () => {
    const { key } = await servicePartner(service);
    const ref = await createUser(service, key);
    const response = await service.api("POST", `/users/${ref}/kyc`, { key, rawBody: "{level: BASIC" });
    assertError(response, 400, "VALIDATION_ERROR");
  });

  test("VALIDATION_ERROR comes before NOT_FOUND", async () => {
    const { key } = await servicePartner(service);
    assertError(await requestSession(service, key, "nobody", { level: "BASIC" }), 400, "VALIDATION_ERROR");
  });

  test("an unknown user is NOT_FOUND (404)", async () => {
    const { id, key } = await servicePartner(service);
    assertError(await requestSession(service, key, "nobody"), 404, "NOT_FOUND");
    assert.equal((await usage(service, id)).counts.total, 0);
  });

  test("another partner's user is NOT_FOUND and keeps its status", async () => {
    const owner = await servicePartner(service);
    const other = await servicePartner(service);
    const ref = await createUser(service, owner.key);
    assertError(await requestSession(service, other.key, ref), 404, "NOT_FOUND");
    assert.equal((await userDetail(service, owner.key, ref)).kycStatus, "NOT_REQUIRED");
  });

  test("an http returnUrl is accepted in sandbox", async () => {
    const { key } = await servicePartner(service);
    const ref = await createUser(service, key);
    const response = await requestSession(service, key, ref, { level: "BASIC", returnUrl: "http://127.0.0.1:9/done" });
    assert.equal(response.status, 201, JSON.stringify(response.body));
  });
});

describe("returnUrl rule", () => {
  test("outside sandbox an http returnUrl is VALIDATION_ERROR", () => {
    assert.throws(() => checkReturnUrl("http://partner.example/done", false), { code: "VALIDATION_ERROR" });
  });

  test("outside sandbox an https returnUrl is accepted", () => {
    assert.doesNotThrow(() => checkReturnUrl("https://partner.example/done?x=1", false));
  });

  test("a returnUrl carrying credentials is VALIDATION_ERROR", () => {
    assert.throws(() => checkReturnUrl("https://user:pw@partner.example/done", true), { code: "VALIDATION_ERROR" });
  });
});
