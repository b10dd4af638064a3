import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, midMinute } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Decisions section 3: MISSING_API_KEY, INVALID_API_KEY, PARTNER_INACTIVE, PARTNER_SUSPENDED,
// IP_NOT_ALLOWED, RATE_LIMITED, then the route itself. Requests come from 127.0.0.1.
const ELSEWHERE = ["203.0.113.7"];

let service: TestService;

before(async () => {
  const pinned = midMinute();
  service = await startTestService({}, { clock: { now: () => pinned } });
});
after(async () => {
  await service.close();
});

async function partnerWith(changes: Record<string, unknown>, fields: Record<string, unknown> = {}) {
  const partner = await service.createPartner(fields);
  if (Object.keys(changes).length > 0) {
    const patched = await service.admin("PATCH", `/partners/${partner.id}`, changes);
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
  }
  return partner;
}

/** Uses up the partner's window (the ENTERPRISE partners here allow 2 requests a minute). */
async function exhaust(key: string): Promise<void> {
  for (let i = 0; i < 2; i += 1) await service.api("GET", "/health", { key });
}

test("without a key, MISSING_API_KEY comes before the body is parsed", async () => {
  assertError(await service.api("POST", "/users", { rawBody: "{not json" }), 401, "MISSING_API_KEY");
});

test("with an unknown key, INVALID_API_KEY comes before the body is parsed", async () => {
  const key = `ofrk_${"ab".repeat(32)}`;
  assertError(await service.api("POST", "/users", { key, rawBody: "{not json" }), 401, "INVALID_API_KEY");
});

test("an inactive partner from a disallowed address gets PARTNER_INACTIVE", async () => {
  const partner = await partnerWith({ status: "INACTIVE", ipAllowList: ELSEWHERE });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
});

test("an inactive and suspended partner gets PARTNER_INACTIVE", async () => {
  const partner = await partnerWith({ status: "INACTIVE", kybStatus: "SUSPENDED" });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
});

test("a suspended partner from a disallowed address gets PARTNER_SUSPENDED", async () => {
  const partner = await partnerWith({ kybStatus: "SUSPENDED", ipAllowList: ELSEWHERE });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_SUSPENDED");
});

test("a partner over its rate limit from a disallowed address gets IP_NOT_ALLOWED", async () => {
  const partner = await partnerWith({ ipAllowList: ELSEWHERE }, { tier: "ENTERPRISE", limits: { requestsPerMinute: 2 } });
  await exhaust(partner.apiKey);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "IP_NOT_ALLOWED");
});

test("an inactive partner over its rate limit gets PARTNER_INACTIVE", async () => {
  const partner = await partnerWith({ status: "INACTIVE" }, { tier: "ENTERPRISE", limits: { requestsPerMinute: 2 } });
  await exhaust(partner.apiKey);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
});

test("a partner over its rate limit gets RATE_LIMITED before its body is validated", async () => {
  const partner = await partnerWith({}, { tier: "ENTERPRISE", limits: { requestsPerMinute: 2 } });
  await exhaust(partner.apiKey);
  assertError(await service.api("POST", "/users", { key: partner.apiKey, rawBody: "{not json" }), 429, "RATE_LIMITED");
  assertError(await service.api("POST", "/users", { key: partner.apiKey, body: { unknown: 1 } }), 429, "RATE_LIMITED");
});

test("the route's own VALIDATION_ERROR comes last, after the request is counted", async () => {
  const partner = await partnerWith({}, { tier: "ENTERPRISE", limits: { requestsPerMinute: 2 } });
  const response = await service.api("POST", "/users", { key: partner.apiKey, rawBody: "{not json" });
  assertError(response, 400, "VALIDATION_ERROR");
  assert.equal(response.headers.get("X-RateLimit-Limit"), "2");
  assert.equal(response.headers.get("X-RateLimit-Remaining"), "1");
});
