// Outside sandbox (SANDBOX=false) the dashboard's session cookie is `Secure` (decisions 18): set on
// accepting an invitation and on sign-in, and cleared with the same attributes on sign-out. Every
// outside service is an address where nothing listens: only the dashboard and the admin API are used.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";
import { dashboardClient, memberOf } from "./support.ts";

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let service: TestService;
before(async () => {
  const unreachable = `http://127.0.0.1:${await closedPort()}`;
  service = await startTestService({
    SANDBOX: "false",
    // Required by the configuration; the test database is passed to the service beside it.
    DATABASE_URL: "postgres://unused@127.0.0.1:5432/unused",
    RPC_URL: unreachable,
    ESCROW_ADDRESS: `0x${"1".repeat(40)}`,
    USDC_ADDRESS: `0x${"2".repeat(40)}`,
    SERVICE_PRIVATE_KEY: `0x${"3".repeat(64)}`,
    ARBITER_PRIVATE_KEY: `0x${"4".repeat(64)}`,
    ADMIN_ADDRESS: `0x${"5".repeat(40)}`,
    ADMIN_TOKEN: "production-admin-token-0123456789-abcdef",
    BANXICO_SIE_URL: unreachable,
    BANXICO_TOKEN: "token",
    FALLBACK_RATE_URL: unreachable,
    CEP_URL: unreachable,
    KYC_PROVIDER_URL: unreachable,
    KYC_PROVIDER_API_KEY: "production-kyc-key",
    KYC_PROVIDER_SECRET: "production-kyc-secret",
  });
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
