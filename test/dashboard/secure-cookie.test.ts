// Outside sandbox (SANDBOX=false) the dashboard's session cookie is `Secure` (decisions 18): set on
// accepting an invitation and on sign-in, and cleared with the same attributes on sign-out. Every
// outside service is an address where nothing listens: only the dashboard and the admin API are used.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startProductionModeService, type TestService } from "../support/service.ts";
import { dashboardClient, memberOf } from "./support.ts";

let service: TestService;
before(async () => {
  service = await startProductionModeService();
});
after(() => service?.close());

const sessionCookie = (headers: Headers) => headers.getSetCookie().find((line) => line.startsWith("offramp_dashboard="));

test("outside sandbox the session cookie is Secure, HttpOnly and SameSite=Strict, from sign-in to sign-out", async () => {
  assert.equal(service.config.sandbox, false);
  const partner = await service.createPartner({ name: "Production Partner" });
  const owner = await memberOf(service, partner.id, "OWNER");
  const client = dashboardClient(service);
  const signed = await client.signIn(owner.email, owner.password);
  assert.equal(signed.status, 201, JSON.stringify(signed.body));
  const cookie = sessionCookie(signed.headers);
  assert.ok(cookie, "a session cookie is set");
  assert.match(cookie, /; Secure/);
  assert.match(cookie, /; HttpOnly/);
  assert.match(cookie, /; SameSite=Strict/);
  const out = await client.call("DELETE", "/session");
  assert.equal(out.status, 204);
  const cleared = sessionCookie(out.headers);
  assert.ok(cleared);
  assert.match(cleared, /Max-Age=0/);
  assert.match(cleared, /; Secure/);
});
