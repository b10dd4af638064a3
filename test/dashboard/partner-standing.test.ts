import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import type { TestService } from "../support/service.ts";
import { placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";
import { startReceiver, waitFor, type TestReceiver } from "../webhooks/support/receiver.ts";
import { dashboardClient, inviteToken, memberOf } from "./support.ts";

// A partner that is not ACTIVE, or whose KYB is SUSPENDED (decisions section 18): its members still sign
// in, read and sign out, and every change of the dashboard API answers 403 PARTNER_INACTIVE or
// PARTNER_SUSPENDED as its API key does (inactive first, as in section 3), and changes nothing.

let service: TestService;
let receiver: TestReceiver;
let partner: { id: string; apiKey: string; webhookSecret: string };
let owner: Awaited<ReturnType<typeof memberOf>>;
let viewerId: string;
let deliveryId: string;

before(async () => {
  receiver = await startReceiver();
  service = await startOfflineOrderService();
  partner = await service.createPartner({ name: "Lapsed", tier: "GROWTH", webhookUrl: receiver.url });
  owner = await memberOf(service, partner.id, "OWNER");
  viewerId = (await memberOf(service, partner.id, "VIEWER")).memberId;
  await placeOrder({ service, partner }, { ref: "lapsed-user" });
  deliveryId = await waitFor("a delivery", async () => {
    const page = await service.api<{ deliveries: { id: string; status: string }[] }>("GET", "/webhooks", { key: partner.apiKey });
    return page.body.deliveries.find((delivery) => delivery.status === "DELIVERED")?.id;
  });
});
after(async () => {
  await service?.close();
  await receiver?.close();
});

/** Every change route of the dashboard's document but signing in and out and accepting an invitation, with a valid request. */
function changes(): Record<string, { method: string; path: string; body?: unknown }> {
  return {
    "POST /api-keys": { method: "POST", path: "/api-keys" },
    "PUT /ip-allow-list": { method: "PUT", path: "/ip-allow-list", body: { entries: ["203.0.113.0/24"] } },
    "PUT /webhook": { method: "PUT", path: "/webhook", body: { url: null } },
    "POST /webhook-secret": { method: "POST", path: "/webhook-secret" },
    "POST /webhook/test": { method: "POST", path: "/webhook/test" },
    "POST /deliveries/{id}/redeliver": { method: "POST", path: `/deliveries/${deliveryId}/redeliver` },
    "POST /members": { method: "POST", path: "/members", body: { email: `late-${Math.random().toString(36).slice(2, 8)}@example.com`, role: "VIEWER" } },
    "PATCH /members/{id}": { method: "PATCH", path: `/members/${viewerId}`, body: { role: "OWNER" } },
    "DELETE /members/{id}": { method: "DELETE", path: `/members/${viewerId}` },
  };
}

const EXEMPT = ["POST /session", "DELETE /session", "POST /invitations/{token}"];

/** The partner and everything a change route could touch, as the admin API shows it. */
async function snapshot() {
  const { updatedAt: _updatedAt, ...details } = (await service.admin<Record<string, unknown>>("GET", `/partners/${partner.id}`)).body;
  const members = (await service.admin("GET", `/partners/${partner.id}/members`)).body;
  const deliveries = (await service.admin("GET", `/deliveries?partnerId=${partner.id}`)).body;
  const audit = (await service.admin<{ total: number }>("GET", `/partners/${partner.id}/audit-log`)).body.total;
  return { details, members, deliveries, audit, received: receiver.requests.length };
}

async function setStanding(fields: { status?: string; kybStatus?: string }) {
  assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, fields), 200);
}

async function everyChangeRefused(code: string) {
  const document = (await (await fetch(`${service.baseUrl}/dashboard/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods)
      .filter((method) => method !== "get")
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
  const list = changes();
  assert.deepEqual(routes.filter((route) => !EXEMPT.includes(route) && !(route in list)), [], "every change route is tried");
  const before = await snapshot();
  for (const [route, change] of Object.entries(list)) {
    const answer = await owner.call(change.method, change.path, { body: change.body });
    assertError(answer, 403, code);
    assert.ok(answer.status === 403, route);
  }
  assert.deepEqual(await snapshot(), before, "nothing changed");
}

test("an INACTIVE partner's owner gets 403 PARTNER_INACTIVE on every change, as its API key does", async () => {
  await setStanding({ status: "INACTIVE" });
  try {
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_INACTIVE");
    await everyChangeRefused("PARTNER_INACTIVE");
  } finally {
    await setStanding({ status: "ACTIVE" });
  }
});

test("a KYB-suspended partner's owner gets 403 PARTNER_SUSPENDED on every change; inactive and suspended answers PARTNER_INACTIVE", async () => {
  await setStanding({ kybStatus: "SUSPENDED" });
  try {
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_SUSPENDED");
    await everyChangeRefused("PARTNER_SUSPENDED");
    await setStanding({ status: "INACTIVE" });
    assertError(await owner.call("POST", "/api-keys"), 403, "PARTNER_INACTIVE");
  } finally {
    await setStanding({ status: "ACTIVE", kybStatus: "APPROVED" });
  }
});

test("members of an INACTIVE partner still sign in, read, accept invitations and sign out", async () => {
  const invited = await service.admin<{ inviteUrl: string }>("POST", `/partners/${partner.id}/members`, { email: "newcomer@lapsed.example", role: "DEVELOPER" });
  await setStanding({ status: "INACTIVE", kybStatus: "SUSPENDED" });
  try {
    const member = dashboardClient(service);
    assertStatus(await member.call("POST", `/invitations/${inviteToken(invited.body.inviteUrl)}`, { body: { password: "a long enough password" }, csrf: false }), 201);
    const signedIn = dashboardClient(service);
    assertStatus(await signedIn.signIn(owner.email, owner.password), 201);
    for (const path of ["/session", "/partner", "/usage", "/members", "/audit-log", "/deliveries", `/deliveries/${deliveryId}`, "/orders"]) {
      assertStatus(await signedIn.call("GET", path), 200);
    }
    assert.equal((await signedIn.call<{ status: string }>("GET", "/partner")).body.status, "INACTIVE");
    assert.equal((await signedIn.call("DELETE", "/session")).status, 204);
    assertError(await signedIn.call("GET", "/partner"), 401, "UNAUTHORIZED");
  } finally {
    await setStanding({ status: "ACTIVE", kybStatus: "APPROVED" });
  }
});

test("the role is checked before the partner's standing: a VIEWER of an INACTIVE partner is 403 FORBIDDEN", async () => {
  const viewer = await memberOf(service, partner.id, "VIEWER");
  await setStanding({ status: "INACTIVE" });
  try {
    assertError(await viewer.call("POST", "/api-keys"), 403, "FORBIDDEN");
  } finally {
    await setStanding({ status: "ACTIVE" });
  }
});

test("once ACTIVE again, the owner's changes work", async () => {
  assertStatus(await owner.call("PUT", "/webhook", { body: { url: receiver.url } }), 200);
});
