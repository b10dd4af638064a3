import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { hashPassword } from "../../src/dashboard/credentials.ts";
import { pruneDashboard } from "../../src/dashboard/maintenance.ts";
import { EXPIRED_INVITATION_DAYS } from "../../src/dashboard/members.ts";
import { FAILURE_WINDOW_SECONDS } from "../../src/dashboard/sessions.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type ApiResponse, type TestService } from "../support/service.ts";
import { dashboardClient, inviteToken, memberOf } from "./support.ts";

// Sign-in and invitation throttling (decisions section 18): only failures count, per email and per
// address, judged one at a time after the credential is checked; right credentials sent together are
// never refused because of each other. And the work a stranger can cause: a made-up or stale invitation
// costs no password hash. Behind one trusted proxy, so each test comes from addresses of its own.
// Windows are quarter hours (UTC): the service's clock runs from a second into one a few hours ahead, so
// no test's attempts are split between two windows as the wall clock crosses a quarter hour.

let service: TestService;
let partnerId: string;
let nextAddress = 1;
const freshAddress = () => `198.18.${Math.floor(nextAddress / 250)}.${(nextAddress++ % 250) + 1}`;

const windowMs = FAILURE_WINDOW_SECONDS * 1000;
const shiftMs = (Math.floor(Date.now() / windowMs) + 10) * windowMs + 1000 - Date.now();

before(async () => {
  service = await startTestService({ TRUST_PROXY: "1" }, { clock: { now: () => Date.now() + shiftMs } });
  partnerId = (await service.createPartner({ name: "Office" })).id;
});
after(() => service.close());

function signIn(address: string, email: string, password: string): Promise<ApiResponse> {
  return dashboardClient(service).call("POST", "/session", { body: { email, password }, csrf: false, headers: { "X-Forwarded-For": address } });
}

function accept(address: string, token: string, password = "a long enough password"): Promise<ApiResponse> {
  return dashboardClient(service).call("POST", `/invitations/${token}`, { body: { password }, csrf: false, headers: { "X-Forwarded-For": address } });
}

async function invitation(role: "OWNER" | "DEVELOPER" | "VIEWER" = "VIEWER"): Promise<{ id: string; token: string }> {
  const invited = await service.admin<{ id: string; inviteUrl: string }>("POST", `/partners/${partnerId}/members`, { email: `m-${Math.random().toString(36).slice(2, 10)}@office.example`, role });
  assertStatus(invited, 201);
  return { id: invited.body.id, token: inviteToken(invited.body.inviteUrl) };
}

const statuses = (answers: ApiResponse[]) => answers.map((answer) => answer.status);
const countOf = (answers: ApiResponse[], status: number) => answers.filter((answer) => answer.status === status).length;

test("10 right sign-ins sent at once from one address all answer 201", async () => {
  const team = [];
  for (let i = 0; i < 10; i++) team.push(await memberOf(service, partnerId, "VIEWER"));
  const office = freshAddress();
  const answers = await Promise.all(team.map((member) => signIn(office, member.email, member.password)));
  assert.deepEqual(statuses(answers), Array(10).fill(201));
});

test("10 invitations accepted at once from one address all answer 201", async () => {
  const invitations = [];
  for (let i = 0; i < 10; i++) invitations.push(await invitation());
  const office = freshAddress();
  const answers = await Promise.all(invitations.map(({ token }) => accept(office, token)));
  assert.deepEqual(statuses(answers), Array(10).fill(201));
});

test("12 wrong passwords sent at once from one address: exactly 5 answer 401, the rest 429 with Retry-After", async () => {
  const members = [await memberOf(service, partnerId, "VIEWER"), await memberOf(service, partnerId, "VIEWER")];
  const address = freshAddress();
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(address, members[i % 2]!.email, `wrong guess number ${i}`)));
  assert.equal(countOf(answers, 401), 5, `statuses: ${statuses(answers).join(",")}`);
  assert.equal(countOf(answers, 429), 7, `statuses: ${statuses(answers).join(",")}`);
  for (const answer of answers) {
    if (answer.status === 401) assertError(answer, 401, "INVALID_CREDENTIALS");
    else {
      assertError(answer, 429, "RATE_LIMITED");
      assert.ok(Number(answer.headers.get("retry-after")) >= 1);
    }
  }
  // The address is spent for everyone, the right password included; another address is not.
  assertError(await signIn(address, members[0]!.email, members[0]!.password), 429, "RATE_LIMITED");
  assertStatus(await signIn(freshAddress(), members[1]!.email, members[1]!.password), 201);
});

test("12 wrong passwords for one email sent at once from 12 addresses: exactly 5 answer 401, the rest 429", async () => {
  const member = await memberOf(service, partnerId, "DEVELOPER");
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(freshAddress(), member.email, `distributed guess ${i}`)));
  assert.equal(countOf(answers, 401), 5, `statuses: ${statuses(answers).join(",")}`);
  assert.equal(countOf(answers, 429), 7, `statuses: ${statuses(answers).join(",")}`);
  assertError(await signIn(freshAddress(), member.email, member.password), 429, "RATE_LIMITED");
});

test("right sign-ins sent together with wrong guesses from one address: every right one before the 5th failure is let in", async () => {
  const team = [];
  for (let i = 0; i < 4; i++) team.push(await memberOf(service, partnerId, "VIEWER"));
  const address = freshAddress();
  const answers = await Promise.all([
    ...team.map((member) => signIn(address, member.email, member.password)),
    ...Array.from({ length: 4 }, (_, i) => signIn(address, `nobody${i}@office.example`, "wrong password!!")),
  ]);
  assert.deepEqual(statuses(answers), [201, 201, 201, 201, 401, 401, 401, 401], "4 failures leave the address open");
});

test("12 made-up invitations sent at once from one address: exactly 5 answer 404, the rest 429", async () => {
  const address = freshAddress();
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => accept(address, `made-up-invitation-${i}`)));
  assert.equal(countOf(answers, 404), 5, `statuses: ${statuses(answers).join(",")}`);
  assert.equal(countOf(answers, 429), 7, `statuses: ${statuses(answers).join(",")}`);
});

test("a made-up, spent or expired invitation is answered without hashing the password", async () => {
  const spent = await invitation();
  assertStatus(await accept(freshAddress(), spent.token), 201);
  const expired = await invitation();
  await service.pool.query("UPDATE dashboard_members SET invite_expires_at = now() - interval '1 hour' WHERE id = $1", [expired.id]);
  // Hashes queued ahead: an answer that needed a hash would come after all of them.
  let hashesDone = 0;
  const queued = Array.from({ length: 12 }, () => hashPassword("keeps the hashing busy").then(() => (hashesDone += 1)));
  const answers = await Promise.all([accept(freshAddress(), "made-up-invitation"), accept(freshAddress(), spent.token), accept(freshAddress(), expired.token)]);
  const doneWhenAnswered = hashesDone;
  await Promise.all(queued);
  assertError(answers[0]!, 404, "NOT_FOUND");
  assertError(answers[1]!, 404, "NOT_FOUND");
  assertError(answers[2]!, 410, "INVITATION_EXPIRED");
  assert.ok(doneWhenAnswered < 12, `answered only after the ${doneWhenAnswered} hashes queued before them`);
});

test(`an expired invitation answers 410 for ${EXPIRED_INVITATION_DAYS} days, then is removed and its email can be invited again`, async () => {
  const recent = await invitation();
  const old = await invitation();
  await service.pool.query("UPDATE dashboard_members SET invite_expires_at = now() - interval '1 day' WHERE id = $1", [recent.id]);
  await service.pool.query("UPDATE dashboard_members SET invite_expires_at = now() - make_interval(days => $2) - interval '1 minute' WHERE id = $1", [old.id, EXPIRED_INVITATION_DAYS]);
  const { rows } = await service.pool.query<{ email: string }>("SELECT email FROM dashboard_members WHERE id = $1", [old.id]);
  assertError(await service.admin("POST", `/partners/${partnerId}/members`, { email: rows[0]!.email, role: "VIEWER" }), 409, "MEMBER_EXISTS");

  assert.ok((await pruneDashboard(service.pool)) >= 1);
  assertError(await accept(freshAddress(), recent.token), 410, "INVITATION_EXPIRED");
  assertError(await accept(freshAddress(), old.token), 404, "NOT_FOUND");
  const members = (await service.admin<{ members: { id: string }[] }>("GET", `/partners/${partnerId}/members`)).body.members.map((member) => member.id);
  assert.ok(members.includes(recent.id));
  assert.ok(!members.includes(old.id));
  assertStatus(await service.admin("POST", `/partners/${partnerId}/members`, { email: rows[0]!.email, role: "VIEWER" }), 201);
});

test("the clean-up also removes sessions past their 12 hours and failure windows that are over", async () => {
  const member = await memberOf(service, partnerId, "VIEWER");
  await service.pool.query("UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE member_id = $1", [member.memberId]);
  await service.pool.query("INSERT INTO dashboard_auth_failures (bucket, window_start, count) VALUES ('signin-ip:old', now() - interval '1 hour', 3)");
  await pruneDashboard(service.pool);
  const sessions = await service.pool.query("SELECT 1 FROM dashboard_sessions WHERE member_id = $1", [member.memberId]);
  const failures = await service.pool.query("SELECT 1 FROM dashboard_auth_failures WHERE bucket = 'signin-ip:old'");
  assert.equal(sessions.rowCount, 0);
  assert.equal(failures.rowCount, 0);
});
