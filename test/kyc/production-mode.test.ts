// Outside sandbox (SANDBOX=false): https-only returnUrl, no sandbox decision route, a real provider URL.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startProductionModeService, type TestService } from "../support/service.ts";
import { assertError, createUser, requestSession, servicePartner, usage, userDetail } from "./helpers.ts";

let service: TestService;
before(async () => {
  service = await startProductionModeService();
});
after(() => service.close());

test("outside sandbox an http returnUrl is VALIDATION_ERROR", async () => {
  const { key } = await servicePartner(service);
  const ref = await createUser(service, key);
  assertError(await requestSession(service, key, ref, { level: "BASIC", returnUrl: "http://partner.example/done" }), 400, "VALIDATION_ERROR");
});

test("an unreachable provider is KYC_SESSION_FAILED (502) and nothing is counted", async () => {
  const { id, key } = await servicePartner(service);
  const ref = await createUser(service, key);
  assertError(await requestSession(service, key, ref, { level: "FULL", returnUrl: "https://partner.example/done" }), 502, "KYC_SESSION_FAILED");
  assert.equal((await userDetail(service, key, ref)).kycStatus, "NOT_REQUIRED");
  const view = await usage(service, id);
  assert.equal(view.counts.total, 0);
  assert.equal(view.failedAttempts, 1);
});

test("outside sandbox there is no sandbox decision route", async () => {
  const { key } = await servicePartner(service);
  // The route, were it there, would answer VALIDATION_ERROR to this body before looking the session up.
  const response = await service.api("POST", "/sandbox/kyc/any-session/decision", { key, body: { result: "MAYBE" } });
  assertError(response, 404, "NOT_FOUND");
});
