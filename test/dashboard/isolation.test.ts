import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestService } from "../support/service.ts";
import { placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";
import { startReceiver, waitFor, type TestReceiver } from "../webhooks/support/receiver.ts";
import { memberOf, type DashboardClient } from "./support.ts";

// Tenant isolation (decisions section 18): a member of one partner never reads or changes another's data
// through any dashboard route. Every route of the dashboard's OpenAPI document is tried by an OWNER (the
// strongest role) of each partner against the other: routes with an id get the other partner's ids (its
// order, delivery, members) and must answer 404 NOT_FOUND; routes without one act on the member's own
// partner and must show none of the other's identifiers. After every attempt the other partner is read
// through the admin API and must be exactly as before, and its API key must still work.

interface Tenant {
  partner: { id: string; apiKey: string; webhookSecret: string };
  owner: DashboardClient & { email: string; memberId: string };
  viewer: DashboardClient & { email: string; memberId: string };
  invitedId: string;
  orderId: string;
  deliveryId: string;
}

let service: TestService;
let receiver: TestReceiver;
const tenants: Record<"A" | "B", Tenant> = {} as Record<"A" | "B", Tenant>;

async function tenant(name: string): Promise<Tenant> {
  const partner = await service.createPartner({ name, tier: "GROWTH", webhookUrl: receiver.url });
  const owner = await memberOf(service, partner.id, "OWNER", `owner@${name.toLowerCase()}.example`);
  const viewer = await memberOf(service, partner.id, "VIEWER", `viewer@${name.toLowerCase()}.example`);
  const invited = await service.admin<{ id: string }>("POST", `/partners/${partner.id}/members`, { email: `invited@${name.toLowerCase()}.example`, role: "DEVELOPER" });
  const orderId = (await placeOrder({ service, partner }, { ref: `${name}-user` })).id;
  const deliveryId = await waitFor(`${name}'s delivery`, async () => {
    const page = await service.api<{ deliveries: { id: string; status: string }[] }>("GET", "/webhooks", { key: partner.apiKey });
    return page.body.deliveries.find((delivery) => delivery.status === "DELIVERED")?.id;
  });
  return { partner, owner, viewer, invitedId: invited.body.id, orderId, deliveryId };
}

/** Everything of a partner that a dashboard route could read or change, as the admin API shows it. */
async function snapshot(t: Tenant) {
  const partner = (await service.admin<Record<string, unknown>>("GET", `/partners/${t.partner.id}`)).body;
  const members = (await service.admin("GET", `/partners/${t.partner.id}/members`)).body;
  const deliveries = (await service.admin("GET", `/deliveries?partnerId=${t.partner.id}`)).body;
  const order = (await service.api("GET", `/orders/${t.orderId}`, { key: t.partner.apiKey })).body;
  const audit = (await service.admin<{ total: number }>("GET", `/partners/${t.partner.id}/audit-log`)).body.total;
  const keyWorks = (await service.api("GET", "/health", { key: t.partner.apiKey })).status === 200;
  const { updatedAt: _updatedAt, ...rest } = partner;
  return { partner: rest, updatedAt: partner.updatedAt, members, deliveries, order, audit, keyWorks };
}

/** Identifiers of a tenant that must never appear in another tenant's answers. */
function identifiers(t: Tenant): string[] {
  return [t.partner.id, t.orderId, t.deliveryId, t.owner.memberId, t.viewer.memberId, t.invitedId, t.owner.email, t.viewer.email, t.partner.apiKey.slice(0, 13), `${t.partner.id.slice(4)}`];
}

before(async () => {
  receiver = await startReceiver();
  service = await startOfflineOrderService();
  tenants.A = await tenant("Alpha");
  tenants.B = await tenant("Bravo");
});
after(async () => {
  await service?.close();
  await receiver?.close();
});

test("no dashboard route lets a member of one partner read or change another's data", async () => {
  const document = (await (await fetch(`${service.baseUrl}/dashboard/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));

  // For each route: the attempts a member of `me` makes against `other`, and what each must answer.
  type Attempt = { method: string; path: string; body?: unknown; expect: number[] };
  const attempts = (me: Tenant, other: Tenant): Record<string, Attempt[]> => ({
    "POST /session": [{ method: "POST", path: "/session", body: { email: other.owner.email, password: "not their password" }, expect: [401] }],
    "GET /session": [{ method: "GET", path: "/session", expect: [200] }],
    "DELETE /session": [], // run last, separately
    "POST /invitations/{token}": [{ method: "POST", path: `/invitations/${other.invitedId}`, body: { password: "some long password" }, expect: [404] }],
    "GET /partner": [{ method: "GET", path: "/partner", expect: [200] }],
    "POST /api-keys": [{ method: "POST", path: "/api-keys", expect: [201] }],
    "PUT /ip-allow-list": [{ method: "PUT", path: "/ip-allow-list", body: { entries: ["127.0.0.1", "::1", "::ffff:127.0.0.1"] }, expect: [200] }],
    "PUT /webhook": [{ method: "PUT", path: "/webhook", body: { url: receiver.url }, expect: [200] }],
    "POST /webhook-secret": [{ method: "POST", path: "/webhook-secret", expect: [201] }],
    "POST /webhook/test": [{ method: "POST", path: "/webhook/test", expect: [200] }],
    "GET /deliveries": [
      { method: "GET", path: "/deliveries", expect: [200] },
      { method: "GET", path: `/deliveries?orderId=${other.orderId}`, expect: [200] },
      { method: "GET", path: `/deliveries?partnerId=${other.partner.id}`, expect: [400] },
    ],
    "GET /deliveries/{id}": [{ method: "GET", path: `/deliveries/${other.deliveryId}`, expect: [404] }],
    "POST /deliveries/{id}/redeliver": [{ method: "POST", path: `/deliveries/${other.deliveryId}/redeliver`, expect: [404] }],
    "GET /orders": [
      { method: "GET", path: "/orders", expect: [200] },
      { method: "GET", path: `/orders?partnerUserRef=${other === tenants.A ? "Alpha" : "Bravo"}-user`, expect: [200] },
      { method: "GET", path: `/orders?partnerId=${other.partner.id}`, expect: [400] },
    ],
    "GET /orders/{id}": [{ method: "GET", path: `/orders/${other.orderId}`, expect: [404] }],
    "GET /usage": [{ method: "GET", path: "/usage", expect: [200] }],
    "GET /audit-log": [{ method: "GET", path: "/audit-log?limit=100", expect: [200] }],
    "GET /members": [{ method: "GET", path: "/members", expect: [200] }],
    "POST /members": [{ method: "POST", path: "/members", body: { email: other.viewer.email, role: "OWNER" }, expect: [409] }],
    "PATCH /members/{id}": [
      { method: "PATCH", path: `/members/${other.owner.memberId}`, body: { role: "VIEWER" }, expect: [404] },
      { method: "PATCH", path: `/members/${other.viewer.memberId}`, body: { role: "OWNER" }, expect: [404] },
      { method: "PATCH", path: `/members/${other.invitedId}`, body: { role: "OWNER" }, expect: [404] },
    ],
    "DELETE /members/{id}": [
      { method: "DELETE", path: `/members/${other.viewer.memberId}`, expect: [404] },
      { method: "DELETE", path: `/members/${other.owner.memberId}`, expect: [404] },
    ],
  });

  const uncovered = routes.filter((route) => !(route in attempts(tenants.A, tenants.B)));
  assert.deepEqual(uncovered, [], "every dashboard route is in the matrix");

  let tried = 0;
  const leaks: string[] = [];
  const matrix: Record<string, number> = {};
  for (const [meName, otherName] of [["A", "B"], ["B", "A"]] as const) {
    const me = tenants[meName];
    const other = tenants[otherName];
    const foreign = identifiers(other);
    for (const [route, list] of Object.entries(attempts(me, other))) {
      for (const attempt of list) {
        const before = await snapshot(other);
        const response = await me.owner.call(attempt.method, attempt.path, { body: attempt.body });
        const after = await snapshot(other);
        tried += 1;
        matrix[route] = (matrix[route] ?? 0) + 1;
        const label = `${meName}→${otherName} ${attempt.method} ${attempt.path}`;
        if (!attempt.expect.includes(response.status)) leaks.push(`${label}: answered ${response.status} ${JSON.stringify(response.body)}`);
        // What the caller wrote in its own request may come back in the message (an id it asked for, an
        // email already in use); anything else of the other partner's is a leak.
        const request = `${attempt.path} ${JSON.stringify(attempt.body ?? "")}`;
        const text = JSON.stringify(response.body ?? "");
        const shown = foreign.filter((id) => text.includes(id) && !request.includes(id));
        if (shown.length > 0) leaks.push(`${label}: shows ${shown.join(", ")}`);
        // A 404 for the other partner's id must be indistinguishable from one for an id that does not exist.
        if (response.status === 404) {
          const asked = foreign.find((id) => attempt.path.includes(id))!;
          const made = `${asked.slice(0, 4)}${"0".repeat(asked.length - 4)}`;
          const missing = await me.owner.call(attempt.method, attempt.path.replace(asked, made), { body: attempt.body });
          if (missing.status !== 404 || JSON.stringify(missing.body).replace(made, asked) !== text) leaks.push(`${label}: differs from a missing id's answer`);
        }
        try {
          assert.deepEqual(after, before);
        } catch {
          leaks.push(`${label}: changed the other partner`);
        }
        if (!after.keyWorks) leaks.push(`${label}: the other partner's key stopped working`);
        // Keys rotated by `me` are its own: keep its credentials current for the snapshots.
        if (attempt.path === "/api-keys" && response.status === 201) me.partner.apiKey = (response.body as { apiKey: string }).apiKey;
      }
    }
  }
  // Signing out ends only the member's own session.
  for (const [meName, otherName] of [["A", "B"], ["B", "A"]] as const) {
    const out = await tenants[meName].viewer.call("DELETE", "/session");
    tried += 1;
    matrix["DELETE /session"] = (matrix["DELETE /session"] ?? 0) + 1;
    if (out.status !== 204) leaks.push(`${meName} DELETE /session answered ${out.status}`);
    if ((await tenants[otherName].owner.call("GET", "/partner")).status !== 200) leaks.push(`${meName} signing out ended ${otherName}'s session`);
  }
  console.log(`isolation matrix: ${routes.length} routes x 2 partners (each against the other), ${tried} attempts, ${leaks.length} leaks`);
  console.log(JSON.stringify(matrix));
  assert.deepEqual(leaks, []);
});
