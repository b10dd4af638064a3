// The provider's decision moves the user's KYC status (decisions section 4), through its signed callback.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";
import { createUser, decide, postSignedCallback, servicePartner, startSession, userDetail, veriffDecision, veriffScreening } from "./helpers.ts";

let service: TestService;
let key: string;
before(async () => {
  service = await startTestService();
  // GROWTH: enough requests per minute for the whole file on one partner.
  key = (await servicePartner(service, { tier: "GROWTH" })).key;
});
after(() => service.close());

describe("KYC status moves", () => {
  test("an APPROVED decision makes the user APPROVED with the session's level as tier and the approval time", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    const decisionTime = "2026-11-20T10:11:12.345Z";
    assert.equal((await postSignedCallback(service, veriffDecision(sessionId, "approved", { decisionTime }))).status, 200);
    const user = await userDetail(service, key, ref);
    assert.equal(user.kycStatus, "APPROVED");
    assert.equal(user.kycTier, "BASIC");
    assert.equal(user.kycCompletedAt, decisionTime);
  });

  test("a REJECTED decision makes the user REJECTED with no tier", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    const user = await decide(service, key, sessionId, "REJECTED");
    assert.equal(user.kycStatus, "REJECTED");
    assert.equal(user.kycTier, "NONE");
    assert.equal(user.kycCompletedAt, null);
  });

  test("a REJECTED user who starts a new session is PENDING again", async () => {
    const ref = await createUser(service, key);
    await decide(service, key, (await startSession(service, key, ref)).sessionId, "REJECTED");
    await startSession(service, key, ref);
    assert.equal((await userDetail(service, key, ref)).kycStatus, "PENDING");
  });

  test("a REJECTED user approved on a later session is APPROVED", async () => {
    const ref = await createUser(service, key);
    await decide(service, key, (await startSession(service, key, ref)).sessionId, "REJECTED");
    const user = await decide(service, key, (await startSession(service, key, ref)).sessionId, "APPROVED");
    assert.equal(user.kycStatus, "APPROVED");
    assert.equal(user.kycTier, "BASIC");
  });

  test("a BASIC user who starts a FULL session shows PENDING and keeps BASIC until the decision", async () => {
    const ref = await createUser(service, key);
    const approved = await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "APPROVED");
    await startSession(service, key, ref, "FULL");
    const user = await userDetail(service, key, ref);
    assert.equal(user.kycStatus, "PENDING");
    assert.equal(user.kycTier, "BASIC");
    assert.equal(user.kycCompletedAt, approved.kycCompletedAt);
  });

  test("a BASIC user approved for FULL holds FULL, completed at the FULL approval", async () => {
    const ref = await createUser(service, key);
    await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "APPROVED");
    const { sessionId } = await startSession(service, key, ref, "FULL");
    const decisionTime = new Date(Date.now() + 1000).toISOString();
    await postSignedCallback(service, veriffDecision(sessionId, "approved", { decisionTime }));
    const user = await userDetail(service, key, ref);
    assert.equal(user.kycTier, "FULL");
    assert.equal(user.kycCompletedAt, decisionTime);
  });

  test("a BASIC user whose FULL session is rejected is REJECTED and still holds BASIC", async () => {
    const ref = await createUser(service, key);
    await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "APPROVED");
    const user = await decide(service, key, (await startSession(service, key, ref, "FULL")).sessionId, "REJECTED");
    assert.equal(user.kycStatus, "REJECTED");
    assert.equal(user.kycTier, "BASIC");
  });

  test("a FULL holder stays FULL after a later BASIC rejection", async () => {
    const ref = await createUser(service, key);
    const full = await decide(service, key, (await startSession(service, key, ref, "FULL")).sessionId, "APPROVED");
    const user = await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "REJECTED");
    assert.equal(user.kycStatus, "REJECTED");
    assert.equal(user.kycTier, "FULL");
    assert.equal(user.kycCompletedAt, full.kycCompletedAt);
  });

  test("a FULL holder approved again for BASIC keeps FULL and its completion time", async () => {
    const ref = await createUser(service, key);
    const full = await decide(service, key, (await startSession(service, key, ref, "FULL")).sessionId, "APPROVED");
    const user = await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "APPROVED");
    assert.equal(user.kycStatus, "APPROVED");
    assert.equal(user.kycTier, "FULL");
    assert.equal(user.kycCompletedAt, full.kycCompletedAt);
  });

  test("the level applied is the session's, not the level a callback's vendorData claims", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    await postSignedCallback(service, veriffDecision(sessionId, "approved", { vendorData: "FULL:someone" }));
    assert.equal((await userDetail(service, key, ref)).kycTier, "BASIC");
  });
});

describe("replayed callbacks", () => {
  test("a replayed decision answers 200 and changes nothing further", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    const body = veriffDecision(sessionId, "approved");
    assert.equal((await postSignedCallback(service, body)).status, 200);
    const once = await userDetail(service, key, ref);
    const replay = await postSignedCallback(service, body);
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body, { received: true, outcome: "already-decided" });
    assert.deepEqual(await userDetail(service, key, ref), once);
  });

  test("a second, different decision for a decided session changes nothing", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    const approved = await decide(service, key, sessionId, "APPROVED");
    assert.equal((await postSignedCallback(service, veriffDecision(sessionId, "declined"))).status, 200);
    assert.deepEqual(await userDetail(service, key, ref), approved);
  });

  test("concurrent deliveries of one decision apply it once", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    const body = veriffDecision(sessionId, "approved");
    const answers = await Promise.all([1, 2, 3, 4].map(() => postSignedCallback(service, body)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
    assert.deepEqual(answers.map((a) => (a.body as { outcome: string }).outcome).sort(), ["already-decided", "already-decided", "already-decided", "decided"]);
  });
});

describe("screening", () => {
  test("a PEP match in the decision sets isPep", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    const user = await decide(service, key, sessionId, "APPROVED", { isPep: true });
    assert.equal(user.isPep, true);
    assert.equal(user.isSanctioned, false);
  });

  test("a FULL approval with no PEP match leaves isPep false", async () => {
    const ref = await createUser(service, key);
    const user = await decide(service, key, (await startSession(service, key, ref, "FULL")).sessionId, "APPROVED");
    assert.equal(user.isPep, false);
  });

  test("a watchlist screening with a sanctions listing sets isSanctioned and leaves the status", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    assert.equal((await postSignedCallback(service, veriffScreening(sessionId, { sanctions: true }))).status, 200);
    const user = await userDetail(service, key, ref);
    assert.equal(user.isSanctioned, true);
    assert.equal(user.isPep, false);
    assert.equal(user.kycStatus, "PENDING");
  });

  test("a watchlist screening with a PEP listing sets isPep on a decided user", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    await decide(service, key, sessionId, "APPROVED");
    assert.equal((await postSignedCallback(service, veriffScreening(sessionId, { pep: true }))).status, 200);
    const user = await userDetail(service, key, ref);
    assert.equal(user.isPep, true);
    assert.equal(user.kycStatus, "APPROVED");
  });

  test("a later no-match screening does not clear a PEP match", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    await postSignedCallback(service, veriffScreening(sessionId, { pep: true }));
    await postSignedCallback(service, veriffScreening(sessionId, {}));
    assert.equal((await userDetail(service, key, ref)).isPep, true);
  });
});
