import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { gzipSync } from "node:zlib";
import { assertError, assertStatus } from "../support/assertions.ts";
import { ADMIN_TOKEN, startTestService, type TestService } from "../support/service.ts";

// Inputs `npm run fuzz` answered with a 500 or accepted when they must be refused (decisions 11 and 15):
// each is now VALIDATION_ERROR and changes nothing; and an idempotent replay keeps the first answer's bytes.
let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ tier: "ENTERPRISE" });
});
after(() => service.close());

async function count(sql: string, ...values: unknown[]): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>(sql, values);
  return Number(rows[0]!.n);
}

/** node:http, so the raw path and body bytes are sent as they are. */
function raw(method: string, path: string, headers: Record<string, string | string[]>, body?: Buffer): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(service.baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: url.hostname, port: url.port, method, path, headers: body ? { ...headers, "content-length": String(body.length) } : headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown> }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

test("a body that does not decode with its Content-Encoding answers VALIDATION_ERROR, not 500", async () => {
  const cases: [string, Buffer][] = [
    ["gzip", Buffer.from("not gzip at all")],
    ["gzip", gzipSync(Buffer.from('{"partnerUserRef":"enc-1"}')).subarray(0, 12)],
    ["deflate", Buffer.from([0x78, 0x9c, 0xff, 0xff, 0x00])],
    ["br", Buffer.from([0x1b, 0xff, 0x00])],
  ];
  for (const [encoding, bytes] of cases) {
    const response = await raw("POST", "/api/v1/users", { "x-api-key": partner.apiKey, "content-type": "application/json", "content-encoding": encoding }, bytes);
    assertError({ ...response, headers: new Headers() }, 400, "VALIDATION_ERROR");
  }
  // A well-formed gzip body is still read.
  const ok = await raw("POST", "/api/v1/users", { "x-api-key": partner.apiKey, "content-type": "application/json", "content-encoding": "gzip" }, gzipSync(Buffer.from('{"partnerUserRef":"enc-ok"}')));
  assert.equal(ok.status, 201);
});

test("NUL (U+0000) in a body field or a query value answers VALIDATION_ERROR (in a path, NOT_FOUND) and stores nothing", async () => {
  const before = await count("SELECT count(*) AS n FROM users");
  assertError(await service.api("POST", "/users", { key: partner.apiKey, rawBody: '{"partnerUserRef":"a\\u0000b"}' }), 400, "VALIDATION_ERROR");
  assertError(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "nul-ok", email: "a\u0000@example.com" } }), 400, "VALIDATION_ERROR");
  // (A NUL in a path parameter names nothing: NOT_FOUND, since the exact-routing change.)
  assertError(await service.api("GET", "/users/a%00b", { key: partner.apiKey }), 404, "NOT_FOUND");
  assertError(await service.admin("GET", "/partners?limit=%00"), 400, "VALIDATION_ERROR");
  // Found by the same fuzzer after that check was added: a body nested 5,000 deep overflowed a recursive scan.
  assertError(await service.api("POST", "/users", { key: partner.apiKey, rawBody: `${'{"a":'.repeat(5_000)}"\\u0000"${"}".repeat(5_000)}` }), 400, "VALIDATION_ERROR");
  assertError(await service.api("POST", "/users", { key: partner.apiKey, rawBody: `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}` }), 400, "VALIDATION_ERROR");
  assert.equal(await count("SELECT count(*) AS n FROM users"), before);
});

test("a body with fields on a route that takes none answers VALIDATION_ERROR and does nothing", async () => {
  const target = await service.createPartner({ tier: "FREE" });
  assertError(await service.admin("POST", `/partners/${target.id}/api-keys`, { reason: "rotate" }), 400, "VALIDATION_ERROR");
  // The key was not rotated.
  assertStatus(await service.api("GET", "/health", { key: target.apiKey }), 200);
  // An empty object is no field at all.
  assertStatus(await service.admin("POST", `/partners/${target.id}/api-keys`, {}), 201);
});

test("an idempotent replay has the first answer's bytes: the same keys in the same order (decisions 11)", async () => {
  const headers = { "x-api-key": partner.apiKey, "Idempotency-Key": `order-of-keys-${Date.now()}` };
  const body = JSON.stringify({ partnerUserRef: `key-order-${Date.now()}`, email: "a@example.com" });
  const first = await fetch(`${service.baseUrl}/api/v1/users`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
  const repeat = await fetch(`${service.baseUrl}/api/v1/users`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
  assert.equal(first.status, 201);
  assert.equal(repeat.status, 201);
  assert.equal(await repeat.text(), await first.text());
});

test("a huge page offset answers VALIDATION_ERROR, not 500; the largest exact integer still lists", async () => {
  assertError(await service.admin("GET", `/partners?offset=${"9".repeat(40)}`), 400, "VALIDATION_ERROR");
  // 400 digits coerce to Infinity, which ajv lets through any maximum.
  assertError(await service.admin("GET", `/partners?offset=${"9".repeat(400)}`), 400, "VALIDATION_ERROR");
  assertError(await service.admin("GET", `/partners?limit=${"9".repeat(400)}`), 400, "VALIDATION_ERROR");
  assertError(await service.api("GET", `/webhooks?offset=${"9".repeat(40)}`, { key: partner.apiKey }), 400, "VALIDATION_ERROR");
  assertStatus(await service.admin("GET", `/partners?offset=${Number.MAX_SAFE_INTEGER}`), 200);
});

test("a repeated Authorization header is UNAUTHORIZED on the admin API, even when every line holds the admin token", async () => {
  // Node keeps the first line and drops the others; a proxy in front may have read another one.
  const twice = await raw("GET", "/admin/v1/partners", { authorization: [`Bearer ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}`] });
  assertError({ ...twice, headers: new Headers() }, 401, "UNAUTHORIZED");
  const once = await raw("GET", "/admin/v1/partners", { authorization: `Bearer ${ADMIN_TOKEN}` });
  assert.equal(once.status, 200);
});
