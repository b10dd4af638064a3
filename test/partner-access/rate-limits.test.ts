import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type ApiResponse, type TestService } from "../support/service.ts";

// Windows are fixed UTC minutes (decisions section 3). The services count on the clock they are given,
// which the tests set to chosen instants an hour ahead, so crossing a window never means waiting for one.
const MINUTE = 60_000;
/** The start of a UTC minute an hour ahead; each test moves the clock within or after it. */
const windowStart = Math.floor(Date.now() / MINUTE) * MINUTE + 60 * MINUTE;
const resetOfWindow = String((windowStart + MINUTE) / 1000);

let instant = windowStart;
const clock = { now: () => instant };

function setClock(msIntoWindow: number): void {
  instant = windowStart + msIntoWindow;
}

let service: TestService;
let proxied: TestService;

before(async () => {
  [service, proxied] = await Promise.all([startTestService({}, { clock }), startTestService({ TRUST_PROXY: "1" }, { clock })]);
});
beforeEach(() => setClock(30_000));
after(async () => {
  await Promise.all([service.close(), proxied.close()]);
});

function limitHeaders(response: ApiResponse<unknown>) {
  return {
    limit: response.headers.get("X-RateLimit-Limit"),
    remaining: response.headers.get("X-RateLimit-Remaining"),
    reset: response.headers.get("X-RateLimit-Reset"),
  };
}

async function enterprise(requestsPerMinute: number) {
  return service.createPartner({ tier: "ENTERPRISE", limits: { requestsPerMinute } });
}

test("every /api/v1 response carries the three rate-limit headers, errors included", async () => {
  const partner = await service.createPartner({ tier: "GROWTH" });
  const responses = [
    await service.api("GET", "/health", { key: partner.apiKey }),
    await service.api("GET", "/users/nobody", { key: partner.apiKey }),
    await service.api("POST", "/users", { key: partner.apiKey, body: {} }),
    await service.api("GET", "/no-such-route", { key: partner.apiKey }),
  ];
  assert.deepEqual(
    responses.map((response) => response.status),
    [200, 404, 400, 404],
  );
  responses.forEach((response, index) => {
    assert.deepEqual(limitHeaders(response), { limit: "200", remaining: String(199 - index), reset: resetOfWindow });
  });
});

test("X-RateLimit-Limit is the tier's rate: FREE 50, GROWTH 200, ENTERPRISE 1000", async () => {
  for (const [tier, limit] of [["FREE", "50"], ["GROWTH", "200"], ["ENTERPRISE", "1000"]] as const) {
    const partner = await service.createPartner({ tier });
    const response = await service.api("GET", "/health", { key: partner.apiKey });
    assert.equal(response.headers.get("X-RateLimit-Limit"), limit, tier);
  }
});

test("an ENTERPRISE partner's requestsPerMinute override is its limit", async () => {
  const partner = await enterprise(7);
  const response = await service.api("GET", "/health", { key: partner.apiKey });
  assert.deepEqual(limitHeaders(response), { limit: "7", remaining: "6", reset: resetOfWindow });
});

test("a FREE partner gets 50 requests a minute and the 51st answers 429 RATE_LIMITED with Retry-After", async () => {
  const partner = await service.createPartner({ tier: "FREE" });
  for (let i = 1; i <= 50; i += 1) {
    const response = await service.api("GET", "/health", { key: partner.apiKey });
    assertStatus(response, 200);
    assert.equal(response.headers.get("X-RateLimit-Remaining"), String(50 - i));
  }
  const limited = await service.api("GET", "/health", { key: partner.apiKey });
  assertError(limited, 429, "RATE_LIMITED");
  assert.equal(limited.headers.get("Retry-After"), "30");
  assert.deepEqual(limitHeaders(limited), { limit: "50", remaining: "0", reset: resetOfWindow });
});

test("a rate-limited request changes nothing", async () => {
  const partner = await enterprise(1);
  await service.api("GET", "/health", { key: partner.apiKey });
  assertError(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "late" } }), 429, "RATE_LIMITED");
  const { rows } = await service.pool.query("SELECT 1 FROM users WHERE partner_id = $1", [partner.id]);
  assert.equal(rows.length, 0);
});

test("Retry-After is the whole seconds left in the window, rounded up, at least 1", async () => {
  const partner = await enterprise(1);
  setClock(100);
  await service.api("GET", "/health", { key: partner.apiKey });
  assert.equal((await service.api("GET", "/health", { key: partner.apiKey })).headers.get("Retry-After"), "60");
  setClock(45_500);
  assert.equal((await service.api("GET", "/health", { key: partner.apiKey })).headers.get("Retry-After"), "15");
  setClock(59_999);
  assert.equal((await service.api("GET", "/health", { key: partner.apiKey })).headers.get("Retry-After"), "1");
});

test("a new window starts at the next UTC minute with the full allowance", async () => {
  const partner = await enterprise(2);
  await service.api("GET", "/health", { key: partner.apiKey });
  await service.api("GET", "/health", { key: partner.apiKey });
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 429, "RATE_LIMITED");

  setClock(MINUTE);
  const next = await service.api("GET", "/health", { key: partner.apiKey });
  assertStatus(next, 200);
  assert.deepEqual(limitHeaders(next), { limit: "2", remaining: "1", reset: String((windowStart + 2 * MINUTE) / 1000) });
});

test("windows are aligned to the minute, not to the first request: 2 s apart across the boundary is two windows", async () => {
  const partner = await enterprise(1);
  setClock(59_000);
  assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
  setClock(61_000);
  assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
  setClock(62_000);
  assertError(await service.api("GET", "/health", { key: partner.apiKey }), 429, "RATE_LIMITED");
});

test("two instances of the service on the same database share one window per partner", async () => {
  const second = await startTestService({}, { databaseUrl: service.databaseUrl, clock });
  try {
    const partner = await enterprise(4);
    const one = await service.api("GET", "/health", { key: partner.apiKey });
    const two = await second.api("GET", "/health", { key: partner.apiKey });
    const three = await service.api("GET", "/health", { key: partner.apiKey });
    const four = await second.api("GET", "/health", { key: partner.apiKey });
    assert.deepEqual(
      [one, two, three, four].map((response) => response.headers.get("X-RateLimit-Remaining")),
      ["3", "2", "1", "0"],
    );
    assertError(await second.api("GET", "/health", { key: partner.apiKey }), 429, "RATE_LIMITED");
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 429, "RATE_LIMITED");
  } finally {
    await second.close();
  }
});

test("requests without a valid key are limited per client address at the FREE rate", async () => {
  const from = { "X-Forwarded-For": "198.51.100.21" };
  for (let i = 1; i <= 50; i += 1) {
    // Missing and invalid keys count alike against the address.
    const key = i % 2 === 0 ? `ofrk_${"cd".repeat(32)}` : undefined;
    const response = await proxied.api("GET", "/health", { headers: from, ...(key ? { key } : {}) });
    assert.equal(response.status, 401);
    assert.deepEqual(limitHeaders(response), { limit: "50", remaining: String(50 - i), reset: resetOfWindow });
  }
  const limited = await proxied.api("GET", "/health", { headers: from });
  assertError(limited, 429, "RATE_LIMITED");
  assert.equal(limited.headers.get("Retry-After"), "30");
});

test("another address's unauthenticated window is separate", async () => {
  const first = { "X-Forwarded-For": "198.51.100.31" };
  for (let i = 0; i < 50; i += 1) await proxied.api("GET", "/health", { headers: first });
  assertError(await proxied.api("GET", "/health", { headers: first }), 429, "RATE_LIMITED");
  const other = await proxied.api("GET", "/health", { headers: { "X-Forwarded-For": "198.51.100.32" } });
  assertError(other, 401, "MISSING_API_KEY");
  assert.equal(other.headers.get("X-RateLimit-Remaining"), "49");
});

test("a partner with a valid key is not limited by its address's unauthenticated window", async () => {
  const from = { "X-Forwarded-For": "198.51.100.41" };
  for (let i = 0; i < 50; i += 1) await proxied.api("GET", "/health", { headers: from });
  assertError(await proxied.api("GET", "/health", { headers: from }), 429, "RATE_LIMITED");
  const partner = await proxied.createPartner({ tier: "GROWTH" });
  const response = await proxied.api("GET", "/health", { key: partner.apiKey, headers: from });
  assertStatus(response, 200);
  assert.equal(response.headers.get("X-RateLimit-Limit"), "200");
});

test("with TRUST_PROXY=1 a client cannot dodge its address's window by writing X-Forwarded-For entries", async () => {
  // Each request claims another origin on the left; the proxy's entry (the last) is the same.
  for (let i = 0; i < 50; i += 1) {
    assertError(await proxied.api("GET", "/health", { headers: { "X-Forwarded-For": `10.9.${i}.1, 198.51.100.61` } }), 401, "MISSING_API_KEY");
  }
  assertError(await proxied.api("GET", "/health", { headers: { "X-Forwarded-For": "10.9.200.1, 198.51.100.61" } }), 429, "RATE_LIMITED");
});
