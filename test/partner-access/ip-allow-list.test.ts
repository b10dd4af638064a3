import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Three services: one reached over IPv4 loopback, one listening on IPv6 loopback (::1), and one behind
// one trusted proxy (TRUST_PROXY=1), where the client address is taken from X-Forwarded-For.
let v4: TestService;
let v6: TestService;
let proxied: TestService;

before(async () => {
  [v4, v6, proxied] = await Promise.all([startTestService(), startTestService({ HOST: "::1" }), startTestService({ TRUST_PROXY: "1" })]);
});
after(() => Promise.all([v4.close(), v6.close(), proxied.close()]));

async function healthWithList(service: TestService, ipAllowList: string[], headers: Record<string, string> = {}) {
  const partner = await service.createPartner({ ipAllowList });
  return service.api("GET", "/health", { key: partner.apiKey, headers });
}

test("an empty allow-list allows every address", async () => {
  assertStatus(await healthWithList(v4, []), 200);
});

test("an IPv4 client whose exact address is listed is allowed", async () => {
  assertStatus(await healthWithList(v4, ["203.0.113.9", "127.0.0.1"]), 200);
});

test("an IPv4 client whose address is not listed gets 403 IP_NOT_ALLOWED", async () => {
  assertError(await healthWithList(v4, ["127.0.0.2", "203.0.113.9"]), 403, "IP_NOT_ALLOWED");
});

test("an IPv4 client inside a listed CIDR range is allowed", async () => {
  assertStatus(await healthWithList(v4, ["127.0.0.0/8"]), 200);
});

test("an IPv4 client outside every listed CIDR range gets IP_NOT_ALLOWED", async () => {
  assertError(await healthWithList(v4, ["10.0.0.0/8", "127.0.0.2/31"]), 403, "IP_NOT_ALLOWED");
});

test("a refused address changes nothing: POST /users from it creates no user", async () => {
  const partner = await v4.createPartner({ ipAllowList: ["203.0.113.9"] });
  assertError(await v4.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "blocked" } }), 403, "IP_NOT_ALLOWED");
  const { rows } = await v4.pool.query("SELECT 1 FROM users WHERE partner_id = $1", [partner.id]);
  assert.equal(rows.length, 0);
});

test("an IPv6 client whose exact address is listed is allowed, in any notation", async () => {
  assertStatus(await healthWithList(v6, ["::1"]), 200);
  assertStatus(await healthWithList(v6, ["0:0:0:0:0:0:0:1"]), 200);
});

test("an IPv6 client whose address is not listed gets IP_NOT_ALLOWED", async () => {
  assertError(await healthWithList(v6, ["::2", "2001:db8::1"]), 403, "IP_NOT_ALLOWED");
});

test("an IPv6 client inside a listed IPv6 CIDR range is allowed", async () => {
  assertStatus(await healthWithList(v6, ["::/120"]), 200);
});

test("an IPv6 client outside every listed IPv6 CIDR range gets IP_NOT_ALLOWED", async () => {
  assertError(await healthWithList(v6, ["2001:db8::/32", "::2/127"]), 403, "IP_NOT_ALLOWED");
});

test("an IPv4 entry never matches an IPv6 client", async () => {
  assertError(await healthWithList(v6, ["127.0.0.1", "0.0.0.0/0"]), 403, "IP_NOT_ALLOWED");
});

test("with TRUST_PROXY the X-Forwarded-For address is the one checked", async () => {
  assertStatus(await healthWithList(proxied, ["198.51.100.7"], { "X-Forwarded-For": "198.51.100.7" }), 200);
  assertError(await healthWithList(proxied, ["198.51.100.7"], { "X-Forwarded-For": "198.51.100.8" }), 403, "IP_NOT_ALLOWED");
});

test("with TRUST_PROXY a forwarded IPv6 address is checked against IPv6 CIDR ranges", async () => {
  assertStatus(await healthWithList(proxied, ["2001:db8:1::/48"], { "X-Forwarded-For": "2001:db8:1::42" }), 200);
  assertError(await healthWithList(proxied, ["2001:db8:1::/48"], { "X-Forwarded-For": "2001:db8:2::1" }), 403, "IP_NOT_ALLOWED");
});

test("with TRUST_PROXY the proxy's own address no longer passes for the client", async () => {
  assertError(await healthWithList(proxied, ["127.0.0.1"], { "X-Forwarded-For": "198.51.100.7" }), 403, "IP_NOT_ALLOWED");
});

test("without TRUST_PROXY X-Forwarded-For is ignored and the connection's address is checked", async () => {
  assertError(await healthWithList(v4, ["198.51.100.7"], { "X-Forwarded-For": "198.51.100.7" }), 403, "IP_NOT_ALLOWED");
  assertStatus(await healthWithList(v4, ["127.0.0.1"], { "X-Forwarded-For": "198.51.100.7" }), 200);
});

test("with TRUST_PROXY=1 an address the client writes in X-Forwarded-For does not pass the allow-list", async () => {
  // The client sends "198.51.100.7"; the one proxy appends the address it saw, the last entry.
  assertError(await healthWithList(proxied, ["198.51.100.7"], { "X-Forwarded-For": "198.51.100.7, 203.0.113.50" }), 403, "IP_NOT_ALLOWED");
  assertStatus(await healthWithList(proxied, ["203.0.113.50"], { "X-Forwarded-For": "198.51.100.7, 203.0.113.50" }), 200);
});
