import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FAILURE_WINDOW_SECONDS } from "../../src/dashboard/sessions.ts";
import { signWebhook } from "../../src/webhooks/signature.ts";
import { assertError, assertStatus, ISO_MILLIS, midMinute } from "../support/assertions.ts";
import type { TestService } from "../support/service.ts";
import { placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";
import { startReceiver, waitFor, type TestReceiver } from "../webhooks/support/receiver.ts";
import { dashboardClient, inviteToken, memberOf } from "./support.ts";

// The dashboard API of decisions section 18 over a real service (offline chain: orders are signed, not
// deposited): invitations, sign-in, the session cookie, CSRF, roles, throttling, every route of the table,
// usage read from the enforcing code, and the audit log of members' and operators' changes.

let service: TestService;
/** The service's clock (rate-limit and sign-in throttling windows): the real time unless a test pins or shifts it. */
let pinnedInstant: number | undefined;
let shiftMs = 0;
const serviceClock = { now: () => pinnedInstant ?? Date.now() + shiftMs };
let receiver: TestReceiver;
let partner: { id: string; apiKey: string; webhookSecret: string };
let owner: Awaited<ReturnType<typeof memberOf>>;
let developer: Awaited<ReturnType<typeof memberOf>>;
let viewer: Awaited<ReturnType<typeof memberOf>>;

/**
 * Runs `work` with sign-in throttling counted in a window of its own (15-minute windows are shared by the
 * whole file otherwise). The shifted clock starts a second into that window, so the work cannot cross
 * into the next one as the real clock runs.
 */
async function inOwnThrottleWindow<T>(work: () => Promise<T>): Promise<T> {
  const windowMs = FAILURE_WINDOW_SECONDS * 1000;
  const windowStart = (Math.floor(Date.now() / windowMs) + Math.floor(Math.random() * 1e6) + 10) * windowMs;
  shiftMs = windowStart + 1000 - Date.now();
  try {
    return await work();
  } finally {
    shiftMs = 0;
  }
}

before(async () => {
  receiver = await startReceiver();
  service = await startOfflineOrderService({}, { clock: serviceClock });
  partner = await service.createPartner({ name: "Acme Wallet", tier: "GROWTH" });
  owner = await memberOf(service, partner.id, "OWNER");
  developer = await memberOf(service, partner.id, "DEVELOPER");
  viewer = await memberOf(service, partner.id, "VIEWER");
});
after(async () => {
  await service?.close();
  await receiver?.close();
});

describe("invitations", () => {
  test("an operator invites: 201 { id, email, role, inviteUrl }; accepting signs in with an HttpOnly SameSite=Strict cookie", async () => {
    const invited = await service.admin<Record<string, string>>("POST", `/partners/${partner.id}/members`, { email: "New.Person@Example.com", role: "VIEWER" });
    assertStatus(invited, 201);
    assert.deepEqual(Object.keys(invited.body).sort(), ["email", "id", "inviteUrl", "role"]);
    assert.equal(invited.body.email, "new.person@example.com");
    assert.match(invited.body.inviteUrl!, new RegExp(`^${service.baseUrl}/dashboard#/invitation/[A-Za-z0-9_-]{43}$`));
    const client = dashboardClient(service);
    const accepted = await client.call<{ member: Record<string, unknown>; csrfToken: string }>("POST", `/invitations/${inviteToken(invited.body.inviteUrl!)}`, { body: { password: "twelve chars!" }, csrf: false });
    assertStatus(accepted, 201);
    assert.equal(accepted.body.member.email, "new.person@example.com");
    assert.equal(accepted.body.member.role, "VIEWER");
    assert.equal(accepted.body.member.status, "ACTIVE");
    assert.equal(typeof accepted.body.csrfToken, "string");
    const cookie = accepted.headers.getSetCookie().find((line) => line.startsWith("offramp_dashboard="))!;
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Strict/);
    assert.match(cookie, /; Path=\/dashboard/);
    assert.doesNotMatch(cookie, /Secure/, "sandbox: no Secure (plain http)");
    assertStatus(await client.call("GET", "/partner"), 200);
    // Spent: the same token again is unknown.
    assertError(await dashboardClient(service).call("POST", `/invitations/${inviteToken(invited.body.inviteUrl!)}`, { body: { password: "another password" } }), 404, "NOT_FOUND");
  });

  test("unknown 404, expired 410 INVITATION_EXPIRED, short password 400, email in use 409 MEMBER_EXISTS (across partners)", async () => {
    await inOwnThrottleWindow(async () => {
      assertError(await dashboardClient(service).call("POST", "/invitations/nosuchtoken", { body: { password: "long enough password" } }), 404, "NOT_FOUND");
      const invited = await service.admin<{ id: string; inviteUrl: string }>("POST", `/partners/${partner.id}/members`, { email: "late@example.com", role: "VIEWER" });
      assertError(await dashboardClient(service).call("POST", `/invitations/${inviteToken(invited.body.inviteUrl)}`, { body: { password: "too short" } }), 400, "VALIDATION_ERROR");
      await service.pool.query("UPDATE dashboard_members SET invite_expires_at = now() - interval '1 second' WHERE id = $1", [invited.body.id]);
      assertError(await dashboardClient(service).call("POST", `/invitations/${inviteToken(invited.body.inviteUrl)}`, { body: { password: "long enough password" } }), 410, "INVITATION_EXPIRED");
      const other = await service.createPartner({ name: "Other" });
      assertError(await service.admin("POST", `/partners/${other.id}/members`, { email: owner.email.toUpperCase(), role: "OWNER" }), 409, "MEMBER_EXISTS");
      assertError(await service.admin("POST", "/partners/ptn_nope/members", { email: "x@example.com", role: "OWNER" }), 404, "NOT_FOUND");
      assertError(await service.admin("POST", `/partners/${partner.id}/members`, { email: "not-an-email", role: "OWNER" }), 400, "VALIDATION_ERROR");
      assertError(await service.admin("POST", `/partners/${partner.id}/members`, { email: "y@example.com", role: "ADMIN" }), 400, "VALIDATION_ERROR");
    });
  });

  test("only hashes of invitation and session tokens and scrypt password hashes are stored", async () => {
    const { rows } = await service.pool.query<{ password_hash: string | null; invite_token_hash: Buffer | null }>("SELECT password_hash, invite_token_hash FROM dashboard_members WHERE id = $1", [owner.memberId]);
    assert.match(rows[0]!.password_hash!, /^scrypt\$32768\$8\$1\$/);
    assert.equal(rows[0]!.invite_token_hash, null, "spent");
    const sessions = await service.pool.query<{ token_hash: Buffer }>("SELECT token_hash FROM dashboard_sessions");
    const cookieToken = owner.cookie!.split("=")[1]!;
    for (const row of sessions.rows) {
      assert.equal(row.token_hash.length, 32);
      assert.ok(!row.token_hash.toString("utf8").includes(cookieToken));
    }
  });
});

describe("signing in", () => {
  test("201 { member, csrfToken } with the cookie; wrong password and unknown email answer alike 401 INVALID_CREDENTIALS", async () => {
    await inOwnThrottleWindow(async () => {
      const client = dashboardClient(service);
      const signed = await client.signIn(owner.email, owner.password);
      assertStatus(signed, 201);
      assert.deepEqual(Object.keys(signed.body).sort(), ["csrfToken", "member"]);
      const wrong = await dashboardClient(service).signIn(owner.email, "wrong password!!");
      const unknown = await dashboardClient(service).signIn("nobody@example.com", "wrong password!!");
      assertError(wrong, 401, "INVALID_CREDENTIALS");
      assertError(unknown, 401, "INVALID_CREDENTIALS");
      assert.deepEqual(wrong.body, unknown.body);
    });
  });

  test("after 5 failures in 15 minutes for an email, 429 RATE_LIMITED with Retry-After, even with the right password; a later window lets in", async () => {
    const base = (Math.floor(Date.now() / 900_000) + 5000) * 900_000 + 60_000;
    pinnedInstant = base;
    try {
      for (let i = 0; i < 5; i++) assertError(await dashboardClient(service).signIn(developer.email, `wrong password ${i}`), 401, "INVALID_CREDENTIALS");
      const refused = await dashboardClient(service).signIn(developer.email, developer.password);
      assertError(refused, 429, "RATE_LIMITED");
      assert.equal(refused.headers.get("retry-after"), String(14 * 60));
      pinnedInstant = base + 900_000;
      assertStatus(await dashboardClient(service).signIn(developer.email, developer.password), 201);
    } finally {
      pinnedInstant = undefined;
    }
  });

  test("after 5 failures from one address (any emails), that address gets 429; a success does not reset the count", async () => {
    await inOwnThrottleWindow(async () => {
      for (let i = 0; i < 4; i++) assertError(await dashboardClient(service).signIn(`guess${i}@example.com`, "wrong password!!"), 401, "INVALID_CREDENTIALS");
      assertStatus(await dashboardClient(service).signIn(viewer.email, viewer.password), 201);
      assertError(await dashboardClient(service).signIn("guess9@example.com", "wrong password!!"), 401, "INVALID_CREDENTIALS");
      assertError(await dashboardClient(service).signIn(viewer.email, viewer.password), 429, "RATE_LIMITED");
    });
  });

  test("accepting invitations is throttled the same way (per address)", async () => {
    await inOwnThrottleWindow(async () => {
      for (let i = 0; i < 5; i++) assertError(await dashboardClient(service).call("POST", `/invitations/guess${i}`, { body: { password: "long enough password" } }), 404, "NOT_FOUND");
      assertError(await dashboardClient(service).call("POST", "/invitations/guess-more", { body: { password: "long enough password" } }), 429, "RATE_LIMITED");
    });
  });

  test("20 wrong passwords sent at once: at most 5 answer 401, the rest 429 (parallel guesses cannot pass one check together)", async () => {
    await inOwnThrottleWindow(async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => dashboardClient(service).signIn(owner.email, `parallel guess ${i}`)));
      const statuses = answers.map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 401).length, 5, `statuses: ${statuses.join(",")}`);
      assert.equal(statuses.filter((status) => status === 429).length, 15, `statuses: ${statuses.join(",")}`);
      for (const answer of answers) if (answer.status === 429) assertError(answer, 429, "RATE_LIMITED");
      assertError(await dashboardClient(service).signIn(owner.email, owner.password), 429, "RATE_LIMITED");
    });
  });

  test("parallel invitation guesses: at most 5 answer 404, the rest 429", async () => {
    await inOwnThrottleWindow(async () => {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => dashboardClient(service).call("POST", `/invitations/parallel-guess-${i}`, { body: { password: "long enough password" } })),
      );
      const statuses = answers.map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 404).length, 5, `statuses: ${statuses.join(",")}`);
      assert.equal(statuses.filter((status) => status === 429).length, 15, `statuses: ${statuses.join(",")}`);
    });
  });

  test("signing out ends the session on the server: the old cookie stops working", async () => {
    const client = dashboardClient(service);
    await inOwnThrottleWindow(() => client.signIn(viewer.email, viewer.password));
    const oldCookie = client.cookie;
    assertStatus(await client.call("GET", "/partner"), 200);
    const out = await client.call("DELETE", "/session");
    assert.equal(out.status, 204);
    assert.match(out.headers.getSetCookie().join(), /Max-Age=0/);
    const replay = await fetch(`${service.baseUrl}/dashboard/v1/partner`, { headers: { Cookie: oldCookie! } });
    assert.equal(replay.status, 401);
    assert.equal(((await replay.json()) as { error: string }).error, "UNAUTHORIZED");
  });

  test("GET /session gives a reloaded page its member and CSRF token", async () => {
    const response = await owner.call<{ member: { email: string }; csrfToken: string }>("GET", "/session");
    assertStatus(response, 200);
    assert.equal(response.body.member.email, owner.email);
    assert.equal(response.body.csrfToken, owner.csrfToken);
  });
});

describe("guards: session, then CSRF, then role", () => {
  test("no session: 401 UNAUTHORIZED on every session route, whatever else is missing", async () => {
    const anonymous = dashboardClient(service);
    for (const [method, path] of [["GET", "/partner"], ["POST", "/api-keys"], ["PUT", "/ip-allow-list"], ["GET", "/usage"], ["DELETE", "/session"], ["PATCH", "/members/mbr_x"]] as const) {
      assertError(await anonymous.call(method, path, { body: method === "GET" ? undefined : {} }), 401, "UNAUTHORIZED");
    }
    assertError(await anonymous.call("GET", "/partner", { headers: { Cookie: "offramp_dashboard=forged" } }), 401, "UNAUTHORIZED");
  });

  test("a change without the CSRF header, or with a wrong one, is 403 CSRF_FAILED (before the role check)", async () => {
    assertError(await owner.call("POST", "/api-keys", { csrf: false }), 403, "CSRF_FAILED");
    assertError(await owner.call("POST", "/api-keys", { csrf: developer.csrfToken! }), 403, "CSRF_FAILED");
    assertError(await viewer.call("POST", "/api-keys", { csrf: false }), 403, "CSRF_FAILED");
    assertError(await viewer.call("PUT", "/ip-allow-list", { body: { entries: [] }, csrf: "nope" }), 403, "CSRF_FAILED");
  });

  test("roles: VIEWER reads only; DEVELOPER key, secret, webhook, test, redeliver; OWNER also the allow-list and members", async () => {
    for (const path of ["/partner", "/usage", "/deliveries", "/orders", "/audit-log", "/members"]) assertStatus(await viewer.call("GET", path), 200);
    for (const [method, path, body] of [
      ["POST", "/api-keys", undefined],
      ["POST", "/webhook-secret", undefined],
      ["PUT", "/webhook", { url: receiver.url }],
      ["POST", "/webhook/test", undefined],
      ["POST", "/deliveries/whd_x/redeliver", undefined],
      ["PUT", "/ip-allow-list", { entries: [] }],
      ["POST", "/members", { email: "v@example.com", role: "VIEWER" }],
      ["PATCH", `/members/${viewer.memberId}`, { role: "OWNER" }],
      ["DELETE", `/members/${viewer.memberId}`, undefined],
    ] as const) {
      assertError(await viewer.call(method, path, { body }), 403, "FORBIDDEN");
    }
    for (const [method, path, body] of [
      ["PUT", "/ip-allow-list", { entries: [] }],
      ["POST", "/members", { email: "d@example.com", role: "VIEWER" }],
      ["PATCH", `/members/${viewer.memberId}`, { role: "OWNER" }],
      ["DELETE", `/members/${viewer.memberId}`, undefined],
    ] as const) {
      assertError(await developer.call(method, path, { body }), 403, "FORBIDDEN");
    }
  });
});

describe("partner, key and allow-list", () => {
  test("GET /partner: the admin API's field names with apiKeyPrefix (ofrk_ and 8 more), never a key or secret", async () => {
    const view = await owner.call<Record<string, unknown>>("GET", "/partner");
    assertStatus(view, 200);
    for (const field of ["id", "name", "tier", "kycModel", "status", "webhookUrl", "ipAllowList", "apiKeyPrefix", "feeWallet"]) assert.ok(field in view.body, field);
    assert.equal(view.body.id, partner.id);
    assert.equal(view.body.apiKeyPrefix, partner.apiKey.slice(0, 13));
    const text = JSON.stringify(view.body);
    assert.ok(!text.includes(partner.apiKey) && !text.includes("whsec_") && !text.includes("apiKeyHash"));
  });

  test("rotating the key shows the new key once; it works at once and the old one stops at once", async () => {
    const before = await service.api("GET", "/health", { key: partner.apiKey });
    assertStatus(before, 200);
    const rotated = await developer.call<{ apiKey: string }>("POST", "/api-keys");
    assertStatus(rotated, 201);
    assert.deepEqual(Object.keys(rotated.body), ["apiKey"]);
    assert.match(rotated.body.apiKey, /^ofrk_[0-9a-f]{64}$/);
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 401, "INVALID_API_KEY");
    assertStatus(await service.api("GET", "/health", { key: rotated.body.apiKey }), 200);
    assert.equal((await owner.call<{ apiKeyPrefix: string }>("GET", "/partner")).body.apiKeyPrefix, rotated.body.apiKey.slice(0, 13));
    partner.apiKey = rotated.body.apiKey;
  });

  test("the IP allow-list guards the API key, not the dashboard; bad entries 400", async () => {
    const set = await owner.call<{ ipAllowList: string[] }>("PUT", "/ip-allow-list", { body: { entries: ["10.0.0.0/8", "2001:db8::/32"] } });
    assertStatus(set, 200);
    assert.deepEqual(set.body.ipAllowList, ["10.0.0.0/8", "2001:db8::/32"]);
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "IP_NOT_ALLOWED");
    assertStatus(await owner.call("GET", "/partner"), 200);
    assertError(await owner.call("PUT", "/ip-allow-list", { body: { entries: ["300.1.1.1"] } }), 400, "VALIDATION_ERROR");
    assertError(await owner.call("PUT", "/ip-allow-list", { body: { entries: ["1.2.3.4"], extra: 1 } }), 400, "VALIDATION_ERROR");
    assertStatus(await owner.call("PUT", "/ip-allow-list", { body: { entries: ["127.0.0.1", "::1", "::ffff:127.0.0.1"] } }), 200);
    assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
  });
});

describe("webhook", () => {
  test("set the URL (section 9 rules), rotate the secret (shown once), and the test event is signed like every delivery", async () => {
    assertError(await developer.call("PUT", "/webhook", { body: { url: "ftp://example.com/hook" } }), 400, "VALIDATION_ERROR");
    assertError(await developer.call("PUT", "/webhook", { body: { url: "not a url" } }), 400, "VALIDATION_ERROR");
    const set = await developer.call<{ webhookUrl: string }>("PUT", "/webhook", { body: { url: receiver.url } });
    assertStatus(set, 200);
    assert.equal(set.body.webhookUrl, receiver.url);
    const secret = await developer.call<{ webhookSecret: string }>("POST", "/webhook-secret");
    assertStatus(secret, 201);
    assert.deepEqual(Object.keys(secret.body), ["webhookSecret"]);
    assert.match(secret.body.webhookSecret, /^whsec_[0-9a-f]{64}$/);
    partner.webhookSecret = secret.body.webhookSecret;

    const seen = receiver.requests.length;
    const tested = await developer.call<Record<string, unknown>>("POST", "/webhook/test");
    assertStatus(tested, 200);
    assert.deepEqual(Object.keys(tested.body).sort(), ["delivered", "durationMs", "error", "statusCode"]);
    assert.equal(tested.body.delivered, true);
    assert.equal(tested.body.statusCode, 200);
    assert.equal(tested.body.error, null);
    assert.equal(typeof tested.body.durationMs, "number");
    const request = receiver.requests[seen]!;
    const payload = JSON.parse(request.rawBody) as { event: string; timestamp: string; data: Record<string, unknown> };
    assert.equal(payload.event, "webhook.test");
    assert.match(payload.timestamp, ISO_MILLIS);
    assert.deepEqual(payload.data, { partnerId: partner.id });
    const timestamp = Number(request.headers["x-webhook-timestamp"]);
    assert.equal(request.headers["x-webhook-signature"], signWebhook(partner.webhookSecret, timestamp, request.rawBody));
    assert.match(String(request.headers["x-webhook-id"]), /^whd_/);
    const { rows } = await service.pool.query("SELECT 1 FROM webhook_deliveries WHERE id = $1", [request.headers["x-webhook-id"]]);
    assert.equal(rows.length, 0, "a test event keeps no delivery record");
  });

  test("the test answers 200 whatever the endpoint did: its status, or null when unreachable; never retried", async () => {
    const failing = await startReceiver(() => 503);
    try {
      assertStatus(await developer.call("PUT", "/webhook", { body: { url: failing.url } }), 200);
      const answer = await developer.call<Record<string, unknown>>("POST", "/webhook/test");
      assertStatus(answer, 200);
      assert.equal(answer.body.delivered, false);
      assert.equal(answer.body.statusCode, 503);
      assert.equal(answer.body.error, "HTTP 503");
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(failing.requests.length, 1);
    } finally {
      await failing.close();
    }
    assertStatus(await developer.call("PUT", "/webhook", { body: { url: "http://127.0.0.1:9/closed" } }), 200);
    const unreachable = await developer.call<Record<string, unknown>>("POST", "/webhook/test");
    assertStatus(unreachable, 200);
    assert.equal(unreachable.body.delivered, false);
    assert.equal(unreachable.body.statusCode, null);
    assert.match(String(unreachable.body.error), /ECONNREFUSED|Request failed/);
    assertStatus(await developer.call("PUT", "/webhook", { body: { url: receiver.url } }), 200);
  });
});

describe("orders and the delivery log", () => {
  let orderId: string;

  before(async () => {
    orderId = (await placeOrder({ service, partner }, { ref: "dash-user", amountUsdc: 100 })).id;
    await waitFor("order.created delivered", async () => {
      const page = await viewer.call<{ deliveries: { status: string }[] }>("GET", "/deliveries");
      return page.body.deliveries.some((delivery) => delivery.status === "DELIVERED");
    });
  });

  test("GET /orders and /orders/:id are what GET /orders shows the partner", async () => {
    const mine = await viewer.call("GET", "/orders?limit=5");
    const api = await service.api("GET", "/orders?limit=5", { key: partner.apiKey });
    assertStatus(mine, 200);
    assert.deepEqual(mine.body, api.body);
    const detail = await viewer.call<{ timeline: unknown[] }>("GET", `/orders/${orderId}`);
    assert.deepEqual(detail.body, (await service.api("GET", `/orders/${orderId}`, { key: partner.apiKey })).body);
    assert.ok(detail.body.timeline.length >= 1);
    assertError(await viewer.call("GET", "/orders?status=NOPE"), 400, "VALIDATION_ERROR");
    assertError(await viewer.call("GET", "/orders/ord_nope"), 404, "NOT_FOUND");
  });

  test("GET /deliveries is GET /webhooks (filters, envelope, records); the detail shows each attempt's status code, duration and error", async () => {
    const mine = await viewer.call<{ deliveries: { id: string }[] }>("GET", "/deliveries?status=DELIVERED&eventType=order.created");
    assert.deepEqual(mine.body, (await service.api("GET", "/webhooks?status=DELIVERED&eventType=order.created", { key: partner.apiKey })).body);
    assert.equal(mine.body.deliveries.length, 1);
    assertError(await viewer.call("GET", "/deliveries?status=WHATEVER"), 400, "VALIDATION_ERROR");
    const detail = await viewer.call<{ id: string; attempts: Record<string, unknown>[] }>("GET", `/deliveries/${mine.body.deliveries[0]!.id}`);
    assertStatus(detail, 200);
    assert.equal(detail.body.attempts.length, 1);
    const attempt = detail.body.attempts[0]!;
    assert.equal(attempt.statusCode, 200);
    assert.equal(attempt.error, null);
    assert.equal(typeof attempt.durationMs, "number");
  });

  test("redeliver: 202 with the record (same id, new attempt series), delivered again with the same body", async () => {
    const [delivery] = (await viewer.call<{ deliveries: { id: string }[] }>("GET", "/deliveries?eventType=order.created")).body.deliveries;
    const bodies = receiver.requests.filter((request) => request.headers["x-webhook-id"] === delivery!.id).map((request) => request.rawBody);
    const again = await developer.call<Record<string, unknown>>("POST", `/deliveries/${delivery!.id}/redeliver`);
    assert.equal(again.status, 202);
    assert.equal(again.body.id, delivery!.id);
    assert.equal(again.body.status, "PENDING");
    assert.equal(again.body.attempts, 0);
    assert.ok(!("partnerId" in again.body) && !("series" in again.body));
    await waitFor("the redelivery", () => receiver.requests.filter((request) => request.headers["x-webhook-id"] === delivery!.id).length > bodies.length);
    const sent = receiver.requests.filter((request) => request.headers["x-webhook-id"] === delivery!.id);
    assert.equal(sent.at(-1)!.rawBody, bodies[0]);
    assertError(await developer.call("POST", "/deliveries/whd_nope/redeliver"), 404, "NOT_FOUND");
  });

  test("usage: read by the enforcing code; dashboard requests are not counted in the API window", async () => {
    const fixed = midMinute();
    pinnedInstant = fixed;
    try {
      let remaining = 0;
      for (let i = 0; i < 3; i++) remaining = Number((await service.api("GET", "/health", { key: partner.apiKey })).headers.get("x-ratelimit-remaining"));
      const usage = await viewer.call<Record<string, Record<string, unknown>>>("GET", "/usage");
      assertStatus(usage, 200);
      assert.equal(usage.body.requests!.limit, 200);
      assert.equal(usage.body.requests!.used, 200 - remaining);
      assert.equal(usage.body.requests!.used, 3);
      assert.equal(usage.body.requests!.resetsAt, new Date(Math.floor(fixed / 60_000) * 60_000 + 60_000).toISOString());
      const again = await viewer.call<Record<string, Record<string, unknown>>>("GET", "/usage");
      assert.equal(again.body.requests!.used, 3, "dashboard requests are not counted");
      const order = (await service.api<{ totalMxn: number }>("GET", `/orders/${orderId}`, { key: partner.apiKey })).body;
      assert.deepEqual(usage.body.users, { count: 1, limit: 500 });
      assert.deepEqual(usage.body.volume, { dayMxn: order.totalMxn, dailyLimitMxn: 200000, monthMxn: order.totalMxn, monthlyLimitMxn: 1000000 });
      assert.deepEqual(usage.body.kyc, { sessionsThisMonth: 0, included: 100, cap: 1000, billedUsd: 0 });
      assert.deepEqual(usage.body.revenue, { feesCollectedUsdc: 0, serviceShareUsdc: 0, owedToPartnerUsdc: 0 });
    } finally {
      pinnedInstant = undefined;
    }
  });

  test("usage shows null for unlimited limits (ENTERPRISE)", async () => {
    const enterprise = await service.createPartner({ name: "Big Co", tier: "ENTERPRISE", limits: { requestsPerMinute: 5000 } });
    const member = await memberOf(service, enterprise.id, "VIEWER");
    const usage = await member.call<Record<string, Record<string, unknown>>>("GET", "/usage");
    assert.equal(usage.body.requests!.limit, 5000);
    assert.equal(usage.body.users!.limit, null);
    assert.equal(usage.body.volume!.dailyLimitMxn, null);
    assert.equal(usage.body.volume!.monthlyLimitMxn, null);
    assert.equal(usage.body.kyc!.cap, null);
  });
});

describe("members", () => {
  test("an OWNER invites (like the admin route), lists INVITED and ACTIVE, changes a role and removes; the removed member's session ends", async () => {
    const invited = await owner.call<Record<string, string>>("POST", "/members", { body: { email: "helper@example.com", role: "DEVELOPER" } });
    assertStatus(invited, 201);
    assert.deepEqual(Object.keys(invited.body).sort(), ["email", "id", "inviteUrl", "role"]);
    const list = await viewer.call<{ members: { id: string; status: string; role: string }[] }>("GET", "/members");
    assert.equal(list.body.members.find((member) => member.id === invited.body.id)!.status, "INVITED");
    assert.equal(list.body.members.find((member) => member.id === owner.memberId)!.status, "ACTIVE");
    assertError(await owner.call("POST", "/members", { body: { email: "HELPER@example.com", role: "VIEWER" } }), 409, "MEMBER_EXISTS");

    const helper = dashboardClient(service);
    assertStatus(await helper.call("POST", `/invitations/${inviteToken(invited.body.inviteUrl!)}`, { body: { password: "helper password 1" } }), 201);
    const changed = await owner.call<{ role: string }>("PATCH", `/members/${invited.body.id}`, { body: { role: "VIEWER" } });
    assertStatus(changed, 200);
    assert.equal(changed.body.role, "VIEWER");
    assertError(await helper.call("POST", "/api-keys"), 403, "FORBIDDEN");
    assert.equal((await owner.call("DELETE", `/members/${invited.body.id}`)).status, 204);
    assertError(await helper.call("GET", "/partner"), 401, "UNAUTHORIZED");
    assertError(await owner.call("DELETE", `/members/${invited.body.id}`), 404, "NOT_FOUND");
  });

  test("the last OWNER can be neither demoted nor removed (409 LAST_OWNER); with a second owner it can", async () => {
    assertError(await owner.call("PATCH", `/members/${owner.memberId}`, { body: { role: "DEVELOPER" } }), 409, "LAST_OWNER");
    assertError(await owner.call("DELETE", `/members/${owner.memberId}`), 409, "LAST_OWNER");
    const second = await memberOf(service, partner.id, "OWNER");
    assertStatus(await second.call("PATCH", `/members/${owner.memberId}`, { body: { role: "DEVELOPER" } }), 200);
    assertError(await second.call("DELETE", `/members/${second.memberId}`), 409, "LAST_OWNER");
    assertStatus(await second.call("PATCH", `/members/${owner.memberId}`, { body: { role: "OWNER" } }), 200);
  });
});

describe("audit log", () => {
  test("every change by members and operators: what, who, when, from which address; newest first; never a key or secret", async () => {
    assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { name: "Acme Wallet SA" }), 200);
    const operatorKey = await service.admin<{ apiKey: string }>("POST", `/partners/${partner.id}/api-keys`);
    const operatorSecret = await service.admin<{ webhookSecret: string }>("POST", `/partners/${partner.id}/webhook-secret`);
    const [delivery] = (await viewer.call<{ deliveries: { id: string }[] }>("GET", "/deliveries")).body.deliveries;
    assertStatus(await service.admin("POST", `/deliveries/${delivery!.id}/redeliver`), 200);
    partner.apiKey = operatorKey.body.apiKey;

    const log = await viewer.call<{ entries: { id: string; action: string; actor: { type: string; id: string; email: string | null }; at: string; address: string; details: Record<string, unknown> }[]; total: number; hasMore: boolean }>(
      "GET",
      "/audit-log?limit=100",
    );
    assertStatus(log, 200);
    const entries = log.body.entries;
    assert.equal(log.body.total, entries.length);
    const times = entries.map((entry) => entry.at);
    assert.deepEqual(times, [...times].sort().reverse(), "newest first");
    for (const entry of entries) {
      assert.deepEqual(Object.keys(entry).sort(), ["action", "actor", "address", "at", "details", "id"]);
      assert.match(entry.at, ISO_MILLIS);
      assert.match(entry.address, /127\.0\.0\.1|::1/);
    }
    const find = (action: string, type: string) => entries.find((entry) => entry.action === action && entry.actor.type === type);
    for (const action of ["api_key.rotated", "webhook_secret.rotated", "webhook_url.updated", "ip_allow_list.updated", "member.invited", "member.role_changed", "member.removed", "delivery.redelivered"]) {
      assert.ok(find(action, "MEMBER"), `member ${action}`);
    }
    assert.equal(find("api_key.rotated", "MEMBER")!.actor.email, developer.email);
    assert.equal(find("ip_allow_list.updated", "MEMBER")!.actor.email, owner.email);
    assert.deepEqual(find("ip_allow_list.updated", "MEMBER")!.details, { changes: { ipAllowList: ["127.0.0.1", "::1", "::ffff:127.0.0.1"] } });
    for (const action of ["partner.created", "partner.updated", "api_key.rotated", "webhook_secret.rotated", "delivery.redelivered", "member.invited"]) {
      assert.deepEqual(find(action, "OPERATOR")?.actor, { type: "OPERATOR", id: "admin", email: null }, `operator ${action}`);
    }
    assert.equal(entries[0]!.action, "delivery.redelivered");
    const text = JSON.stringify(log.body);
    for (const secret of [operatorKey.body.apiKey, operatorSecret.body.webhookSecret, "whsec_", "inviteUrl", "password"]) assert.ok(!text.includes(secret), secret);

    // The operator console reads the same log through the admin API.
    const admin = await service.admin<{ entries: unknown[] }>("GET", `/partners/${partner.id}/audit-log?limit=100`);
    assert.deepEqual(admin.body, log.body);
  });
});

describe("document", () => {
  test("the dashboard has its own OpenAPI 3.1 document with every route of the table", async () => {
    const response = await fetch(`${service.baseUrl}/dashboard/v1/openapi.json`);
    assert.equal(response.status, 200);
    const document = (await response.json()) as { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, { security?: unknown }>> };
    assert.equal(document.openapi, "3.1.0");
    assert.equal(document.servers[0]!.url, "/dashboard/v1");
    const routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    for (const route of [
      "POST /invitations/{token}",
      "POST /session",
      "DELETE /session",
      "GET /partner",
      "POST /api-keys",
      "PUT /ip-allow-list",
      "PUT /webhook",
      "POST /webhook-secret",
      "POST /webhook/test",
      "GET /deliveries",
      "POST /deliveries/{id}/redeliver",
      "GET /orders",
      "GET /orders/{id}",
      "GET /usage",
      "GET /audit-log",
      "GET /members",
      "POST /members",
      "PATCH /members/{id}",
      "DELETE /members/{id}",
    ]) {
      assert.ok(routes.includes(route), route);
    }
    assert.deepEqual(document.paths["/partner"]!.get!.security, [{ session: [] }]);
    assert.deepEqual(document.paths["/session"]!.post!.security, [], "sign-in declares that it needs no session");
    const admin = (await service.admin<{ paths: Record<string, unknown> }>("GET", "/openapi.json")).body;
    assert.ok("/partners/{id}/members" in admin.paths);
  });
});
