import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus, clearOfMinuteEnd } from "../support/assertions.ts";
import { ADMIN_AUTH_FAILURES_PER_MINUTE } from "../../src/http/middleware/admin-auth.ts";
import { ADMIN_TOKEN, startTestService, type ApiResponse, type TestService } from "../support/service.ts";

// Decisions section 12: /admin/v1 needs `Authorization: Bearer <ADMIN_TOKEN>`; 401 UNAUTHORIZED otherwise.
let service: TestService;
let partnerId: string;

// Behind one trusted proxy, so each call can come from its own address: failed authentications are
// limited per address, and this file fails on purpose more often than the limit allows one address.
let nextAddress = 1;
const freshAddress = () => `198.18.${Math.floor(nextAddress / 250)}.${(nextAddress++ % 250) + 1}`;

before(async () => {
  service = await startTestService({ TRUST_PROXY: "1" });
  partnerId = (await service.createPartner()).id;
});
after(() => service.close());

async function adminCall(method: string, path: string, authorization: string | undefined, body?: unknown): Promise<ApiResponse> {
  const headers: Record<string, string> = { "X-Forwarded-For": freshAddress() };
  if (authorization !== undefined) headers.Authorization = authorization;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${service.baseUrl}/admin/v1${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

async function partnerCount(): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM partners");
  return Number(rows[0]!.n);
}

test("a request without Authorization answers 401 UNAUTHORIZED", async () => {
  assertError(await adminCall("GET", "/partners", undefined), 401, "UNAUTHORIZED");
});

test("a wrong bearer token answers 401 UNAUTHORIZED", async () => {
  assertError(await adminCall("GET", "/partners", `Bearer ${ADMIN_TOKEN}x`), 401, "UNAUTHORIZED");
});

test("the token under another scheme answers 401 UNAUTHORIZED", async () => {
  assertError(await adminCall("GET", "/partners", `Basic ${ADMIN_TOKEN}`), 401, "UNAUTHORIZED");
  assertError(await adminCall("GET", "/partners", ADMIN_TOKEN), 401, "UNAUTHORIZED");
});

test("a partner's API key is not an admin token", async () => {
  const partner = await service.createPartner();
  assertError(await adminCall("GET", "/partners", `Bearer ${partner.apiKey}`), 401, "UNAUTHORIZED");
});

test("the bearer scheme is matched without regard to case", async () => {
  assertStatus(await adminCall("GET", "/partners", `bearer ${ADMIN_TOKEN}`), 200);
});

const routes: [string, string, unknown?][] = [
  ["GET", "/partners"],
  ["GET", "/partners/{id}"],
  ["POST", "/partners", { name: "Sneaky", tier: "FREE", kycModel: "PARTNER_MANAGED" }],
  ["PATCH", "/partners/{id}", { status: "INACTIVE" }],
  ["POST", "/partners/{id}/api-keys"],
  ["POST", "/partners/{id}/webhook-secret"],
];
for (const [method, path, body] of routes) {
  test(`${method} /admin/v1${path} without the token answers UNAUTHORIZED and changes nothing`, async () => {
    const before = await service.pool.query("SELECT * FROM partners ORDER BY id");
    assertError(await adminCall(method, path.replace("{id}", partnerId), `Bearer wrong-token-0123456789`, body), 401, "UNAUTHORIZED");
    const afterwards = await service.pool.query("SELECT * FROM partners ORDER BY id");
    assert.deepEqual(afterwards.rows, before.rows);
  });
}

test("an unknown admin route answers UNAUTHORIZED without the token and NOT_FOUND with it", async () => {
  assertError(await adminCall("GET", "/nothing-here", undefined), 401, "UNAUTHORIZED");
  assertError(await adminCall("GET", "/nothing-here", `Bearer ${ADMIN_TOKEN}`), 404, "NOT_FOUND");
});

test("a malformed body without the token answers UNAUTHORIZED, not VALIDATION_ERROR", async () => {
  const before = await partnerCount();
  const response = await fetch(`${service.baseUrl}/admin/v1/partners`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{nope" });
  assert.equal(response.status, 401);
  assert.equal(((await response.json()) as { error: string }).error, "UNAUTHORIZED");
  assert.equal(await partnerCount(), before);
});

test("failed admin authentications are limited per address: past the limit even the right token waits", async () => {
  const call = (address: string, token: string) =>
    fetch(`${service.baseUrl}/admin/v1/partners`, { headers: { Authorization: `Bearer ${token}`, "X-Forwarded-For": address } });
  await clearOfMinuteEnd();
  for (let i = 0; i < ADMIN_AUTH_FAILURES_PER_MINUTE; i += 1) assert.equal((await call("198.51.100.90", `guess-${i}`)).status, 401);
  const limited = await call("198.51.100.90", "guess-next");
  const body = (await limited.json()) as { message: string };
  assertError({ status: limited.status, headers: limited.headers, body }, 429, "RATE_LIMITED");
  assert.match(body.message, /^Too many failed admin authentications from this address/, "the message says which limit, not a tier's");
  assert.ok(Number(limited.headers.get("Retry-After")) >= 1);
  assert.equal((await call("198.51.100.90", ADMIN_TOKEN)).status, 429, "the right token is not even compared");
  assert.equal((await call("198.51.100.91", ADMIN_TOKEN)).status, 200, "another address is not limited");
});

test("parallel guesses from one address are judged one after another: exactly the limit get 401, the rest 429", async () => {
  const call = (token: string) => fetch(`${service.baseUrl}/admin/v1/partners`, { headers: { Authorization: `Bearer ${token}`, "X-Forwarded-For": "198.51.100.93" } });
  await clearOfMinuteEnd();
  const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => call(`parallel-guess-${i}`).then((response) => response.status)));
  assert.equal(statuses.filter((status) => status === 401).length, ADMIN_AUTH_FAILURES_PER_MINUTE);
  assert.equal(statuses.filter((status) => status === 429).length, 30 - ADMIN_AUTH_FAILURES_PER_MINUTE);
  assert.equal((await call(ADMIN_TOKEN)).status, 429, "the right token waits too");
});

test("parallel requests with the right token are never refused for failures", async () => {
  const call = () => fetch(`${service.baseUrl}/admin/v1/partners`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "X-Forwarded-For": "198.51.100.94" } });
  const statuses = await Promise.all(Array.from({ length: 40 }, () => call().then((response) => response.status)));
  assert.deepEqual([...new Set(statuses)], [200]);
});

test("successful admin requests are not counted as failures", async () => {
  const call = (token: string) => fetch(`${service.baseUrl}/admin/v1/partners`, { headers: { Authorization: `Bearer ${token}`, "X-Forwarded-For": "198.51.100.92" } });
  for (let i = 0; i < ADMIN_AUTH_FAILURES_PER_MINUTE + 5; i += 1) assert.equal((await call(ADMIN_TOKEN)).status, 200);
  assert.equal((await call("wrong-token")).status, 401, "a failure after many successes is still only the first");
});
