// GET /admin/v1/partners/:id/kyc-usage?month=YYYY-MM, and the Mexico City months it is cut by.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { mexicoMonth, mexicoMonthRange } from "../../src/domain/periods.ts";
import { ADMIN_TOKEN, startTestService, type TestService } from "../support/service.ts";
import { assertError, createUser, decide, servicePartner, startSession, usage } from "./helpers.ts";

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

describe("GET /admin/v1/partners/:id/kyc-usage", () => {
  test("shows the month's sessions, counts by level, included and billed counts and the billed amount", async () => {
    const { id, key } = await servicePartner(service, { tier: "ENTERPRISE", limits: { kycIncludedPerMonth: 2, kycCapPerMonth: 10 } });
    const alice = await createUser(service, key, "alice");
    const bob = await createUser(service, key, "bob");
    const first = await startSession(service, key, alice, "BASIC");
    await startSession(service, key, bob, "FULL");
    const third = await startSession(service, key, bob, "FULL");
    await startSession(service, key, alice, "BASIC");
    await decide(service, key, first.sessionId, "APPROVED");
    await decide(service, key, third.sessionId, "REJECTED");

    const view = await usage(service, id);
    assert.equal(view.month, mexicoMonth(new Date()));
    assert.equal(view.includedPerMonth, 2);
    assert.equal(view.capPerMonth, 10);
    assert.deepEqual(
      view.sessions.map((s) => [s.partnerUserRef, s.level, s.status, s.billed, s.priceUsd]),
      [
        ["alice", "BASIC", "APPROVED", false, 0],
        ["bob", "FULL", "PENDING", false, 0],
        ["bob", "FULL", "REJECTED", true, 2.5],
        ["alice", "BASIC", "PENDING", true, 1],
      ],
    );
    assert.equal(view.sessions[0]!.sessionId, first.sessionId);
    assert.deepEqual(view.counts, { total: 4, BASIC: 2, FULL: 2 });
    assert.equal(view.included, 2);
    assert.equal(view.billed, 2);
    assert.equal(view.billedAmountUsd, 3.5);
  });

  test("a month without sessions is empty", async () => {
    const { id, key } = await servicePartner(service);
    await startSession(service, key, await createUser(service, key));
    const view = await usage(service, id, "2020-01");
    assert.deepEqual(view.sessions, []);
    assert.deepEqual(view.counts, { total: 0, BASIC: 0, FULL: 0 });
    assert.equal(view.billedAmountUsd, 0);
  });

  test("a month that is not YYYY-MM is VALIDATION_ERROR", async () => {
    const { id } = await servicePartner(service);
    for (const month of ["2026-13", "2026-1", "november", "2026-11-01"]) {
      assertError(await service.admin("GET", `/partners/${id}/kyc-usage?month=${month}`), 400, "VALIDATION_ERROR");
    }
  });

  test("an unknown partner is NOT_FOUND", async () => {
    assertError(await service.admin("GET", "/partners/ptn_nobody/kyc-usage"), 404, "NOT_FOUND");
  });

  test("needs the admin token", async () => {
    const { id } = await servicePartner(service);
    const response = await fetch(`${service.baseUrl}/admin/v1/partners/${id}/kyc-usage`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}x` } });
    assert.equal(response.status, 401);
    assert.equal(((await response.json()) as { error: string }).error, "UNAUTHORIZED");
  });
});

describe("billing months are Mexico City calendar months", () => {
  test("an instant belongs to the Mexico City month, not the UTC one", () => {
    assert.equal(mexicoMonth(new Date("2026-12-01T05:59:59.999Z")), "2026-11");
    assert.equal(mexicoMonth(new Date("2026-12-01T06:00:00.000Z")), "2026-12");
  });

  test("a month runs from local midnight on the 1st to local midnight on the next 1st", () => {
    const { from, to } = mexicoMonthRange("2026-12");
    assert.equal(from.toISOString(), "2026-12-01T06:00:00.000Z");
    assert.equal(to.toISOString(), "2027-01-01T06:00:00.000Z");
  });
});
