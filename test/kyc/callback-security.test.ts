// The provider's callback: only a callback signed over its exact bytes with the shared secret changes anything.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";
import {
  createUser,
  postCallback,
  postSignedCallback,
  servicePartner,
  kycCredentials,
  sign,
  startSession,
  usage,
  userDetail,
  veriffDecision,
  veriffScreening,
  type UsageView,
  type UserDetail,
} from "./helpers.ts";

let service: TestService;
let partnerId: string;
let key: string;
before(async () => {
  service = await startTestService();
  ({ id: partnerId, key } = await servicePartner(service, { tier: "GROWTH" }));
});
after(() => service.close());

/** A user with a PENDING session, and a snapshot to prove a refused callback changed nothing. */
async function pendingSession(): Promise<{ ref: string; sessionId: string; user: UserDetail; usage: UsageView }> {
  const ref = await createUser(service, key);
  const { sessionId } = await startSession(service, key, ref, "FULL");
  return { ref, sessionId, user: await userDetail(service, key, ref), usage: await usage(service, partnerId) };
}

async function assertNothingChanged(before: { ref: string; user: UserDetail; usage: UsageView }): Promise<void> {
  assert.deepEqual(await userDetail(service, key, before.ref), before.user);
  assert.deepEqual(await usage(service, partnerId), before.usage);
}

function errorCode(response: { body: unknown }): string {
  return (response.body as { error: string }).error;
}

describe("refused callbacks change nothing", () => {
  test("an unsigned callback is 401 UNAUTHORIZED", async () => {
    const state = await pendingSession();
    const response = await postCallback(service, veriffDecision(state.sessionId, "approved"), { "X-AUTH-CLIENT": kycCredentials(service).apiKey });
    assert.equal(response.status, 401);
    assert.equal(errorCode(response), "UNAUTHORIZED");
    await assertNothingChanged(state);
  });

  test("a callback without any provider header is 401", async () => {
    const state = await pendingSession();
    const response = await postCallback(service, veriffDecision(state.sessionId, "approved"), {});
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a callback signed with another secret (forged) is 401", async () => {
    const state = await pendingSession();
    const body = veriffDecision(state.sessionId, "approved");
    const response = await postCallback(service, body, { "X-AUTH-CLIENT": kycCredentials(service).apiKey, "X-HMAC-SIGNATURE": sign(body, "not-the-secret") });
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a correctly signed callback naming another integration's API key is 401", async () => {
    const state = await pendingSession();
    const body = veriffDecision(state.sessionId, "approved");
    const response = await postCallback(service, body, { "X-AUTH-CLIENT": "someone-else", "X-HMAC-SIGNATURE": sign(body, kycCredentials(service).secret) });
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a tampered callback (declined turned into approved after signing) is 401", async () => {
    const state = await pendingSession();
    const signed = veriffDecision(state.sessionId, "declined");
    const tampered = signed.replace('"declined"', '"approved"').replace("9102", "9001");
    assert.notEqual(tampered, signed);
    const response = await postCallback(service, tampered, { "X-AUTH-CLIENT": kycCredentials(service).apiKey, "X-HMAC-SIGNATURE": sign(signed, kycCredentials(service).secret) });
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a signed callback re-serialized by a proxy (whitespace changed) is 401", async () => {
    const state = await pendingSession();
    const signed = veriffDecision(state.sessionId, "approved", { spacing: 2 });
    const reserialized = JSON.stringify(JSON.parse(signed));
    const response = await postCallback(service, reserialized, { "X-AUTH-CLIENT": kycCredentials(service).apiKey, "X-HMAC-SIGNATURE": sign(signed, kycCredentials(service).secret) });
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a forged screening callback does not flag the user", async () => {
    const state = await pendingSession();
    const body = veriffScreening(state.sessionId, { sanctions: true, pep: true });
    const response = await postCallback(service, body, { "X-AUTH-CLIENT": kycCredentials(service).apiKey, "X-HMAC-SIGNATURE": sign(body, "guess") });
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });

  test("a signed callback for an unknown session is 404 NOT_FOUND", async () => {
    const state = await pendingSession();
    const response = await postSignedCallback(service, veriffDecision("00000000-0000-4000-8000-000000000000", "approved"));
    assert.equal(response.status, 404);
    assert.equal(errorCode(response), "NOT_FOUND");
    await assertNothingChanged(state);
  });

  test("a signed body that is neither a decision nor a screening is 400 VALIDATION_ERROR", async () => {
    const state = await pendingSession();
    const response = await postSignedCallback(service, JSON.stringify({ hello: state.sessionId }));
    assert.equal(response.status, 400);
    assert.equal(errorCode(response), "VALIDATION_ERROR");
    await assertNothingChanged(state);
  });

  test("a signed body that is not JSON is 400 VALIDATION_ERROR", async () => {
    const state = await pendingSession();
    const response = await postSignedCallback(service, "{not json");
    assert.equal(response.status, 400);
    await assertNothingChanged(state);
  });
});

describe("the signature is checked over the exact bytes received", () => {
  test("a signed body with the provider's own whitespace is accepted", async () => {
    const state = await pendingSession();
    const response = await postSignedCallback(service, veriffDecision(state.sessionId, "approved", { spacing: 3 }));
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal((await userDetail(service, key, state.ref)).kycStatus, "APPROVED");
  });

  test("a signed body with multi-byte UTF-8 characters is accepted", async () => {
    const state = await pendingSession();
    const body = veriffDecision(state.sessionId, "approved");
    assert.ok(Buffer.byteLength(body) > body.length, "the body holds multi-byte characters");
    const response = await postSignedCallback(service, Buffer.from(body, "utf8"));
    assert.equal(response.status, 200, JSON.stringify(response.body));
  });

  test("a body whose bytes do not survive UTF-8 decoding is refused, even when those bytes are signed", async () => {
    const state = await pendingSession();
    const text = veriffDecision(state.sessionId, "approved");
    // "José" with a lone 0xE9 (Latin-1) instead of UTF-8: the bytes do not survive decoding, so they cannot be verified.
    const bytes = Buffer.from(text.replace("José", "Jos\u0000"), "utf8");
    bytes[bytes.indexOf(0)] = 0xe9;
    const response = await postSignedCallback(service, bytes);
    assert.equal(response.status, 401);
    await assertNothingChanged(state);
  });
});
