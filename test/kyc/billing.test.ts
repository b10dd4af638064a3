// KYC sessions per partner per Mexico City month: included allocation free, then billed per level, up to the cap.
// FREE tier: 10 included, cap 25 (decisions section 3).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { mexicoMonth } from "../../src/domain/periods.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { assertError, createUser, requestSession, servicePartner, startSession, usage, userDetail } from "./helpers.ts";

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function freePartnerWithSessions(count: number, level: "BASIC" | "FULL" = "BASIC"): Promise<{ id: string; key: string; ref: string }> {
  const partner = await servicePartner(service, { tier: "FREE" });
  const ref = await createUser(service, partner.key);
  for (let i = 0; i < count; i += 1) await startSession(service, partner.key, ref, level);
  return { ...partner, ref };
}

async function withProviderDown<T>(work: () => Promise<T>): Promise<T> {
  service.simulators!.kyc.setMode("down");
  try {
    return await work();
  } finally {
    service.simulators!.kyc.setMode("normal");
  }
}

describe("included allocation and billing", () => {
  test("the month's first 10 sessions are free", async () => {
    const { id } = await freePartnerWithSessions(10, "FULL");
    const view = await usage(service, id);
    assert.equal(view.counts.total, 10);
    assert.equal(view.included, 10);
    assert.equal(view.billed, 0);
    assert.equal(view.billedAmountUsd, 0);
    assert.ok(view.sessions.every((s) => !s.billed && s.priceUsd === 0));
  });

  test("the 11th session is billed: BASIC at 1.00 USD", async () => {
    const { id, key, ref } = await freePartnerWithSessions(10);
    await startSession(service, key, ref, "BASIC");
    const view = await usage(service, id);
    assert.equal(view.billed, 1);
    assert.deepEqual(
      view.sessions.map((s) => s.billed),
      [...Array(10).fill(false), true],
    );
    assert.equal(view.sessions[10]!.priceUsd, 1);
    assert.equal(view.billedAmountUsd, 1);
  });

  test("the 11th session is billed: FULL at 2.50 USD", async () => {
    const { id, key, ref } = await freePartnerWithSessions(10);
    await startSession(service, key, ref, "FULL");
    const view = await usage(service, id);
    assert.equal(view.sessions[10]!.priceUsd, 2.5);
    assert.equal(view.billedAmountUsd, 2.5);
  });

  test("the billed amount is the exact sum of each billed session's price", async () => {
    const { id, key, ref } = await freePartnerWithSessions(10);
    for (const level of ["FULL", "BASIC", "FULL", "FULL", "BASIC"] as const) await startSession(service, key, ref, level);
    const view = await usage(service, id);
    assert.equal(view.billed, 5);
    assert.equal(view.billedAmountUsd, 9.5);
  });

  test("one partner's sessions do not use another partner's allocation", async () => {
    await freePartnerWithSessions(10);
    const { id } = await freePartnerWithSessions(1);
    assert.equal((await usage(service, id)).billed, 0);
  });

  test("last month's sessions do not use this month's allocation", async () => {
    const { id, key } = await servicePartner(service, { tier: "FREE" });
    const ref = await createUser(service, key);
    const user = await userDetail(service, key, ref);
    const lastMonth = mexicoMonth(new Date(Date.now() - 35 * 86_400_000));
    for (let i = 0; i < 10; i += 1) {
      await service.pool.query(
        `INSERT INTO kyc_sessions (id, partner_id, user_id, level, status, period_month, provider_session_id, session_url, return_url, created_at)
         VALUES ($1, $2, $3, 'BASIC', 'APPROVED', $4, $5, 'https://p.example/s', 'https://p.example/r', now() - interval '35 days')`,
        [`kyc_last_${i}_${id}`, id, user.id, lastMonth, `last-month-${i}-${id}`],
      );
    }
    await startSession(service, key, ref);
    const view = await usage(service, id);
    assert.equal(view.counts.total, 1);
    assert.equal(view.billed, 0);
    assert.equal((await usage(service, id, lastMonth)).counts.total, 10);
  });
});

describe("monthly cap", () => {
  test("past the cap of 25 the next session is KYC_LIMIT_REACHED (403) and changes nothing", async () => {
    const { id, key } = await freePartnerWithSessions(25);
    const before = await usage(service, id);
    assert.equal(before.counts.total, 25);
    const other = await createUser(service, key);
    assertError(await requestSession(service, key, other), 403, "KYC_LIMIT_REACHED");
    assert.equal((await userDetail(service, key, other)).kycStatus, "NOT_REQUIRED");
    assert.deepEqual(await usage(service, id), before);
    assert.equal(before.billed, 15);
    assert.equal(before.billedAmountUsd, 15);
  });

  test("concurrent session starts at the cap: only the places left succeed", async () => {
    const { id, key, ref } = await freePartnerWithSessions(23);
    const answers = await Promise.all(Array.from({ length: 6 }, () => requestSession(service, key, ref)));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [201, 201, 403, 403, 403, 403]);
    for (const refused of answers.filter((a) => a.status === 403)) assert.equal(refused.body.error, "KYC_LIMIT_REACHED");
    const view = await usage(service, id);
    assert.equal(view.counts.total, 25);
    assert.equal(view.billed, 15);
  });
});

describe("provider failures", () => {
  test("a provider error is KYC_SESSION_FAILED (502): the user is unchanged and nothing is counted or billed", async () => {
    const { id, key } = await servicePartner(service, { tier: "FREE" });
    const ref = await createUser(service, key);
    const response = await withProviderDown(() => requestSession(service, key, ref));
    assertError(response, 502, "KYC_SESSION_FAILED");
    assert.equal((await userDetail(service, key, ref)).kycStatus, "NOT_REQUIRED");
    const view = await usage(service, id);
    assert.equal(view.counts.total, 0);
    assert.equal(view.billedAmountUsd, 0);
    assert.equal(view.failedAttempts, 1);
  });

  test("a failed attempt does not use up an included place", async () => {
    const { id, key, ref } = await freePartnerWithSessions(9);
    assertError(await withProviderDown(() => requestSession(service, key, ref)), 502, "KYC_SESSION_FAILED");
    await startSession(service, key, ref);
    assert.equal((await usage(service, id)).billed, 0);
    await startSession(service, key, ref);
    assert.equal((await usage(service, id)).billed, 1);
  });

  test("a failed attempt does not hold a place under the cap", async () => {
    const { id, key, ref } = await freePartnerWithSessions(24);
    assertError(await withProviderDown(() => requestSession(service, key, ref)), 502, "KYC_SESSION_FAILED");
    await startSession(service, key, ref);
    assert.equal((await usage(service, id)).counts.total, 25);
  });

  test("a REJECTED user whose new session fails stays REJECTED", async () => {
    const { key } = await servicePartner(service, { tier: "FREE" });
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref);
    await service.api("POST", `/sandbox/kyc/${sessionId}/decision`, { key, body: { result: "REJECTED" } });
    const rejected = await userDetail(service, key, ref);
    assert.equal(rejected.kycStatus, "REJECTED");
    assertError(await withProviderDown(() => requestSession(service, key, ref)), 502, "KYC_SESSION_FAILED");
    assert.deepEqual(await userDetail(service, key, ref), rejected);
  });
});
