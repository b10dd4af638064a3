// Outside sandbox (SANDBOX=false): https-only returnUrl, no sandbox decision route, a real provider URL.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";
import { assertError, createUser, requestSession, servicePartner, usage, userDetail } from "./helpers.ts";

/** A local port nothing listens on: the provider is unreachable there. */
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
after(() => service.close());

test("outside sandbox an http returnUrl is VALIDATION_ERROR", async () => {
  const { key } = await servicePartner(service);
  const ref = await createUser(service, key);
  assertError(await requestSession(service, key, ref, { level: "BASIC", returnUrl: "http://partner.example/done" }), 400, "VALIDATION_ERROR");
});

test("an unreachable provider is KYC_SESSION_FAILED (502) and nothing is counted", async () => {
  const { id, key } = await servicePartner(service);
  const ref = await createUser(service, key);
  assertError(await requestSession(service, key, ref, { level: "FULL", returnUrl: "https://partner.example/done" }), 502, "KYC_SESSION_FAILED");
  assert.equal((await userDetail(service, key, ref)).kycStatus, "NOT_REQUIRED");
  const view = await usage(service, id);
  assert.equal(view.counts.total, 0);
  assert.equal(view.failedAttempts, 1);
});

test("outside sandbox there is no sandbox decision route", async () => {
  const { key } = await servicePartner(service);
  // The route, were it there, would answer VALIDATION_ERROR to this body before looking the session up.
  const response = await service.api("POST", "/sandbox/kyc/any-session/decision", { key, body: { result: "MAYBE" } });
  assertError(response, 404, "NOT_FOUND");
});
