import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { dashboardClient, memberOf } from "./support.ts";

// A member trying what its session should not allow (decisions section 18): another session's CSRF token,
// a session presented at sign-in (fixation), rights kept after a demotion, the last owner leaving.

let service: TestService;
let partnerId: string;

before(async () => {
  service = await startTestService();
  partnerId = (await service.createPartner({ name: "Hostile Inc" })).id;
});
after(() => service.close());

test("a CSRF token belongs to its session: another session's token, even the same member's, is 403 CSRF_FAILED", async () => {
  const owner = await memberOf(service, partnerId, "OWNER");
  const second = dashboardClient(service);
  assertStatus(await second.signIn(owner.email, owner.password), 201);
  assert.notEqual(second.csrfToken, owner.csrfToken);
  assertError(await owner.call("POST", "/webhook-secret", { csrf: second.csrfToken! }), 403, "CSRF_FAILED");
  assertError(await second.call("POST", "/webhook-secret", { csrf: owner.csrfToken! }), 403, "CSRF_FAILED");
  // A signed-out session's token does not come back with a new session.
  const oldToken = second.csrfToken!;
  assert.equal((await second.call("DELETE", "/session")).status, 204);
  assertStatus(await second.signIn(owner.email, owner.password), 201);
  assertError(await second.call("POST", "/webhook-secret", { csrf: oldToken }), 403, "CSRF_FAILED");
});

test("signing in never adopts the session a client presents: a new token each time, the old one unchanged", async () => {
  const member = await memberOf(service, partnerId, "VIEWER");
  const planted = member.cookie!;
  const signedIn = await dashboardClient(service).call<{ csrfToken: string }>("POST", "/session", {
    body: { email: member.email, password: member.password },
    csrf: false,
    headers: { Cookie: planted },
  });
  assertStatus(signedIn, 201);
  const issued = signedIn.headers.getSetCookie().find((line) => line.startsWith("offramp_dashboard="))!.split(";")[0]!;
  assert.notEqual(issued, planted);
  assert.notEqual(signedIn.body.csrfToken, member.csrfToken);
  assertStatus(await member.call("GET", "/session"), 200);
});

test("a demoted member loses the role's changes at once, in the session already open", async () => {
  const owner = await memberOf(service, partnerId, "OWNER");
  const other = await memberOf(service, partnerId, "OWNER");
  assertStatus(await other.call("PUT", "/ip-allow-list", { body: { entries: [] } }), 200);
  assertStatus(await owner.call("PATCH", `/members/${other.memberId}`, { body: { role: "DEVELOPER" } }), 200);
  assertError(await other.call("PUT", "/ip-allow-list", { body: { entries: [] } }), 403, "FORBIDDEN");
  assertError(await other.call("PATCH", `/members/${other.memberId}`, { body: { role: "OWNER" } }), 403, "FORBIDDEN");
  assertStatus(await owner.call("PATCH", `/members/${other.memberId}`, { body: { role: "VIEWER" } }), 200);
  assertError(await other.call("POST", "/webhook-secret"), 403, "FORBIDDEN");
});

test("the last active OWNER cannot demote or remove itself; an OWNER still INVITED does not count", async () => {
  const partner = await service.createPartner({ name: "Solo" });
  const solo = await memberOf(service, partner.id, "OWNER");
  const invited = await solo.call<{ id: string }>("POST", "/members", { body: { email: "future-owner@solo.example", role: "OWNER" } });
  assertStatus(invited, 201);
  assertError(await solo.call("PATCH", `/members/${solo.memberId}`, { body: { role: "VIEWER" } }), 409, "LAST_OWNER");
  assertError(await solo.call("DELETE", `/members/${solo.memberId}`), 409, "LAST_OWNER");
  assertStatus(await solo.call("GET", "/partner"), 200);
});

test("two owners removing each other at once: one removal wins, the removed owner's request changes nothing (401)", async () => {
  const partner = await service.createPartner({ name: "Duel" });
  const a = await memberOf(service, partner.id, "OWNER");
  const b = await memberOf(service, partner.id, "OWNER");
  const [byA, byB] = await Promise.all([a.call("DELETE", `/members/${b.memberId}`), b.call("DELETE", `/members/${a.memberId}`)]);
  assert.deepEqual([byA.status, byB.status].sort(), [204, 401], `answers ${byA.status} ${byB.status}`);
  const members = (await service.admin<{ members: { role: string; status: string }[] }>("GET", `/partners/${partner.id}/members`)).body.members;
  assert.deepEqual(members.map((member) => `${member.role} ${member.status}`), ["OWNER ACTIVE"]);
});

test("an owner who took an email another partner needs: an operator removes that member, its session ends, the email is free", async () => {
  const squatter = await memberOf(service, partnerId, "OWNER");
  const taken = await memberOf(service, partnerId, "VIEWER", "cfo@rightful.example");
  const rightful = await service.createPartner({ name: "Rightful" });
  assertError(await service.admin("POST", `/partners/${rightful.id}/members`, { email: "cfo@rightful.example", role: "OWNER" }), 409, "MEMBER_EXISTS");

  assertError(await service.admin("DELETE", `/partners/${rightful.id}/members/${taken.memberId}`), 404, "NOT_FOUND");
  assertError(await service.admin("DELETE", `/partners/${partnerId}/members/mbr_nope`), 404, "NOT_FOUND");
  assert.equal((await service.admin("DELETE", `/partners/${partnerId}/members/${taken.memberId}`)).status, 204);
  assertError(await taken.call("GET", "/partner"), 401, "UNAUTHORIZED");
  assertStatus(await service.admin("POST", `/partners/${rightful.id}/members`, { email: "cfo@rightful.example", role: "OWNER" }), 201);
  const audit = (await squatter.call<{ entries: { action: string; actor: { type: string }; details: { memberId?: string } }[] }>("GET", "/audit-log")).body.entries;
  assert.ok(audit.some((entry) => entry.action === "member.removed" && entry.actor.type === "OPERATOR" && entry.details.memberId === taken.memberId));
});

test("an operator cannot remove a partner's last active OWNER either (409 LAST_OWNER)", async () => {
  const partner = await service.createPartner({ name: "Alone" });
  const only = await memberOf(service, partner.id, "OWNER");
  assertError(await service.admin("DELETE", `/partners/${partner.id}/members/${only.memberId}`), 409, "LAST_OWNER");
});

/** Holds the partner's row lock in a transaction of its own while `during` runs, then commits what `during` did in it. */
async function underPartnerLock(partner: string, during: (tx: { query: (sql: string, values?: unknown[]) => Promise<unknown> }) => Promise<void>) {
  const tx = await service.pool.connect();
  try {
    await tx.query("BEGIN");
    await tx.query("SELECT 1 FROM partners WHERE id = $1 FOR UPDATE", [partner]);
    await during(tx);
    await tx.query("COMMIT");
  } finally {
    tx.release();
  }
}

/** Waits until some statement waits for a lock (a request that passed its guards and queues behind the partner's row). */
async function someoneWaitsForALock() {
  for (let i = 0; i < 200; i++) {
    const { rows } = await service.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted");
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("no request ever waited for the partner's lock");
}

test("an owner removed while its member change waits for the partner's lock changes nothing (401)", async () => {
  const partner = await service.createPartner({ name: "Race" });
  const a = await memberOf(service, partner.id, "OWNER");
  const b = await memberOf(service, partner.id, "OWNER");
  const c = await memberOf(service, partner.id, "OWNER");
  let answers: Awaited<ReturnType<typeof b.call>>[] = [];
  await underPartnerLock(partner.id, async (tx) => {
    const racing = Promise.all([b.call("DELETE", `/members/${a.memberId}`), b.call("PATCH", `/members/${c.memberId}`, { body: { role: "VIEWER" } })]);
    await someoneWaitsForALock();
    await tx.query("DELETE FROM dashboard_members WHERE id = $1", [b.memberId]); // A removes B meanwhile
    void racing.then((settled) => (answers = settled));
  });
  await new Promise((resolve) => setTimeout(resolve, 0));
  while (answers.length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
  for (const answer of answers) assertError(answer, 401, "UNAUTHORIZED");
  const members = (await service.admin<{ members: { id: string; role: string }[] }>("GET", `/partners/${partner.id}/members`)).body.members;
  assert.deepEqual(members.map((member) => `${member.id} ${member.role}`).sort(), [`${a.memberId} OWNER`, `${c.memberId} OWNER`].sort());
});

test("an owner demoted while its invitation waits for the partner's lock invites no one (403 FORBIDDEN)", async () => {
  const partner = await service.createPartner({ name: "Race Two" });
  await memberOf(service, partner.id, "OWNER");
  const b = await memberOf(service, partner.id, "OWNER");
  let answer: Awaited<ReturnType<typeof b.call>> | undefined;
  await underPartnerLock(partner.id, async (tx) => {
    const racing = b.call("POST", "/members", { body: { email: "accomplice@race.example", role: "OWNER" } });
    await someoneWaitsForALock();
    await tx.query("UPDATE dashboard_members SET role = 'VIEWER' WHERE id = $1", [b.memberId]);
    void racing.then((settled) => (answer = settled));
  });
  while (!answer) await new Promise((resolve) => setTimeout(resolve, 25));
  assertError(answer, 403, "FORBIDDEN");
  const members = (await service.admin<{ members: { email: string }[] }>("GET", `/partners/${partner.id}/members`)).body.members;
  assert.ok(!members.some((member) => member.email === "accomplice@race.example"));
});
