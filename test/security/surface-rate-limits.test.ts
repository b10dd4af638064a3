// Decisions section 19: every surface is rate-limited. Market and dashboard sessions per session (all of
// one buyer's or member's sessions share a window), every route without a credential per client address,
// and an IPv6 address counted by its /64, in the partner API's per-address window and the admin
// authentication failures too. Windows are fixed UTC minutes on the service's clock, set to the middle of
// a minute an hour ahead; each test uses its own addresses, so tests do not share windows.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { ADDRESS_REQUESTS_PER_MINUTE, DASHBOARD_SESSION_REQUESTS_PER_MINUTE, MARKET_SESSION_REQUESTS_PER_MINUTE } from "../../src/http/middleware/surface-limits.ts";
import { ADMIN_AUTH_FAILURES_PER_MINUTE } from "../../src/http/middleware/admin-auth.ts";
import { MARKET_AUTH_REQUESTS_PER_MINUTE } from "../../src/market/routes.ts";
import { memberOf } from "../dashboard/support.ts";
import { market, newWallet, signIn } from "../market/support.ts";
import { assertError, assertStatus, clearOfMinuteEnd, midMinute } from "../support/assertions.ts";
import type { ApiResponse, TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";

const instant = midMinute(30);
const clock = { now: () => instant };
const resetOfWindow = String((Math.floor(instant / 60_000) * 60_000 + 60_000) / 1000);

let service: TestService;
before(async () => {
  service = await startOfflineOrderService({ TRUST_PROXY: "1" }, { clock });
});
after(() => service.close());

const from = (address: string) => ({ "X-Forwarded-For": address });
const headersOf = (response: ApiResponse<unknown>) => ({
  limit: response.headers.get("X-RateLimit-Limit"),
  remaining: response.headers.get("X-RateLimit-Remaining"),
  reset: response.headers.get("X-RateLimit-Reset"),
});

function assertLimited(response: ApiResponse<unknown>): void {
  assertError(response, 429, "RATE_LIMITED");
  assert.equal(response.headers.get("Retry-After"), "30");
}

async function dashboardCall(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${service.baseUrl}/dashboard/v1${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

test(`a market buyer gets ${MARKET_SESSION_REQUESTS_PER_MINUTE} requests a minute across its sessions; the next answers 429, another buyer's do not`, async () => {
  const account = newWallet();
  const first = await signIn({ service }, account);
  for (let i = 1; i <= MARKET_SESSION_REQUESTS_PER_MINUTE - 1; i += 1) {
    const response = await market({ service }, "GET", "/trades", { token: first.token });
    assertStatus(response, 200);
    assert.deepEqual(headersOf(response), { limit: String(MARKET_SESSION_REQUESTS_PER_MINUTE), remaining: String(MARKET_SESSION_REQUESTS_PER_MINUTE - i), reset: resetOfWindow });
  }
  // The same wallet signed in again shares the window: its last request, then nothing.
  const second = await signIn({ service }, account);
  assertStatus(await market({ service }, "GET", "/trades", { token: second.token }), 200);
  assertLimited(await market({ service }, "GET", "/trades", { token: first.token }));
  assertLimited(await market({ service }, "GET", "/me", { token: second.token }));

  const other = await signIn({ service });
  const response = await market({ service }, "GET", "/trades", { token: other.token });
  assertStatus(response, 200);
  assert.equal(response.headers.get("X-RateLimit-Remaining"), String(MARKET_SESSION_REQUESTS_PER_MINUTE - 1));
});

test(`made-up market tokens are counted per address: ${ADDRESS_REQUESTS_PER_MINUTE} answer 401, the next 429`, async () => {
  const headers = from("198.51.100.71");
  for (let i = 1; i <= ADDRESS_REQUESTS_PER_MINUTE; i += 1) {
    const response = await market({ service }, "GET", "/me", { token: `mks_${randomBytes(32).toString("hex")}`, headers });
    assertError(response, 401, "UNAUTHORIZED");
    assert.equal(response.headers.get("X-RateLimit-Remaining"), String(ADDRESS_REQUESTS_PER_MINUTE - i));
  }
  assertLimited(await market({ service }, "GET", "/me", { token: `mks_${randomBytes(32).toString("hex")}`, headers }));
  // A real session from that address is its own window.
  const buyer = await signIn({ service });
  assertStatus(await market({ service }, "GET", "/me", { token: buyer.token, headers }), 200);
});

test(`a dashboard member gets ${DASHBOARD_SESSION_REQUESTS_PER_MINUTE} requests a minute across its sessions; the next answers 429`, async () => {
  const partner = await service.createPartner();
  const member = await memberOf(service, partner.id, "VIEWER");
  for (let i = 1; i <= DASHBOARD_SESSION_REQUESTS_PER_MINUTE - 1; i += 1) {
    const response = await member.call("GET", "/partner");
    assertStatus(response, 200);
    assert.equal(response.headers.get("X-RateLimit-Remaining"), String(DASHBOARD_SESSION_REQUESTS_PER_MINUTE - i));
  }
  // Signing in again (the address's sign-in route is its own window) gives the member no fresh budget.
  const again = await dashboardCall("POST", "/session", from("198.51.100.72"), { email: member.email, password: member.password });
  assertStatus(again, 201);
  const cookie = again.headers.getSetCookie()[0]!.split(";")[0]!;
  assertStatus(await dashboardCall("GET", "/partner", { Cookie: cookie }), 200);
  assertLimited(await member.call("GET", "/partner"));
  assertLimited(await dashboardCall("GET", "/partner", { Cookie: cookie }));

  const colleague = await memberOf(service, partner.id, "VIEWER");
  assertStatus(await colleague.call("GET", "/partner"), 200);
});

test(`the dashboard's sign-in route, which takes no credential, is limited per address: the ${ADDRESS_REQUESTS_PER_MINUTE + 1}st request answers 429`, async () => {
  const headers = from("198.51.100.73");
  for (let i = 1; i <= ADDRESS_REQUESTS_PER_MINUTE; i += 1) {
    // Refused by the body's schema, so the sign-in failure throttle never counts them.
    const response = await dashboardCall("POST", "/session", headers, {});
    assert.equal(response.status, 400);
    assert.deepEqual(headersOf(response), { limit: String(ADDRESS_REQUESTS_PER_MINUTE), remaining: String(ADDRESS_REQUESTS_PER_MINUTE - i), reset: resetOfWindow });
  }
  assertLimited(await dashboardCall("POST", "/session", headers, {}));
  assertLimited(await dashboardCall("POST", `/invitations/${randomBytes(16).toString("hex")}`, headers, { password: "correct horse battery staple" }));
  assert.equal((await dashboardCall("POST", "/session", from("198.51.100.74"), {})).status, 400);
});

test("unsigned KYC callbacks are counted per address and answer 429 past the limit", async () => {
  const headers = { ...from("198.51.100.75"), "Content-Type": "application/json" };
  const post = () => fetch(`${service.baseUrl}/callbacks/kyc`, { method: "POST", headers, body: JSON.stringify({ sessionId: "x", result: "APPROVED" }) });
  for (let i = 1; i <= ADDRESS_REQUESTS_PER_MINUTE; i += 1) assert.equal((await post()).status, 401);
  const limited = await post();
  assert.equal(limited.status, 429);
  assert.equal(((await limited.json()) as { error: string }).error, "RATE_LIMITED");
});

test("two IPv6 addresses in one /64 share the partner API's per-address window; another /64 has its own", async () => {
  for (let i = 0; i < 25; i += 1) {
    assertError(await service.api("GET", "/health", { headers: from("2001:db8:1:1::1") }), 401, "MISSING_API_KEY");
    assertError(await service.api("GET", "/health", { headers: from(`2001:db8:1:1:ffff:${i.toString(16)}::2`) }), 401, "MISSING_API_KEY");
  }
  assertLimited(await service.api("GET", "/health", { headers: from("2001:db8:1:1:abcd::9") }));
  const other = await service.api("GET", "/health", { headers: from("2001:db8:1:2::1") });
  assertError(other, 401, "MISSING_API_KEY");
  assert.equal(other.headers.get("X-RateLimit-Remaining"), "49");
});

test("admin authentication failures from one IPv6 /64 are counted together", async () => {
  const admin = (address: string, token: string) => fetch(`${service.baseUrl}/admin/v1/partners`, { headers: { ...from(address), Authorization: `Bearer ${token}` } });
  await clearOfMinuteEnd(); // failed admin authentications are counted by the wall clock, not the pinned one
  for (let i = 0; i < ADMIN_AUTH_FAILURES_PER_MINUTE; i += 1) assert.equal((await admin(`2001:db8:2:1::${(i + 1).toString(16)}`, "wrong-token")).status, 401);
  assert.equal((await admin("2001:db8:2:1:ffff::1", "wrong-token")).status, 429);
  assert.equal((await admin("2001:db8:2:2::1", "wrong-token")).status, 401);
});

test("market sign-in and dashboard sign-in count an IPv6 /64 as one address", async () => {
  const headers = from("2001:db8:3:1::1");
  for (let i = 1; i <= ADDRESS_REQUESTS_PER_MINUTE; i += 1) {
    assert.equal((await dashboardCall("POST", "/session", from(`2001:db8:3:1::${i.toString(16)}`), {})).status, 400);
  }
  assertLimited(await dashboardCall("POST", "/session", headers, {}));
  assert.equal((await dashboardCall("POST", "/session", from("2001:db8:3:2::1"), {})).status, 400);

  // The market's sign-in routes: MARKET_AUTH_REQUESTS_PER_MINUTE per address.
  for (let i = 1; i <= MARKET_AUTH_REQUESTS_PER_MINUTE; i += 1) {
    assert.equal((await market({ service }, "POST", "/auth/challenge", { body: {}, headers: from(`2001:db8:4:1:${i.toString(16)}::1`) })).status, 400);
  }
  // (Counted on the system clock, like the admin failures: only the code is checked.)
  assertError(await market({ service }, "POST", "/auth/challenge", { body: {}, headers: from("2001:db8:4:1::ffff") }), 429, "RATE_LIMITED");
  assert.equal((await market({ service }, "POST", "/auth/challenge", { body: {}, headers: from("2001:db8:4:2::1") })).status, 400);
});
