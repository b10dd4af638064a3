import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Decisions section 11: malformed JSON, a body that is not an object, a body over 64 KiB and unknown
// fields are VALIDATION_ERROR; unknown routes are NOT_FOUND; every response has X-Request-Id.
let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ tier: "ENTERPRISE" });
});
after(() => service.close());

async function userCount(): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1", [partner.id]);
  return Number(rows[0]!.n);
}

function postUsers(rawBody: string, headers: Record<string, string> = {}) {
  return service.api("POST", "/users", { key: partner.apiKey, rawBody, headers });
}

test("malformed JSON answers 400 VALIDATION_ERROR and creates nothing", async () => {
  const before = await userCount();
  assertError(await postUsers('{"partnerUserRef": "half'), 400, "VALIDATION_ERROR");
  assert.equal(await userCount(), before);
});

for (const [what, rawBody] of [
  ["an array", '[{"partnerUserRef":"in-array"}]'],
  ["a string", '"in-string"'],
  ["a number", "42"],
  ["null", "null"],
  ["true", "true"],
] as const) {
  test(`a JSON body that is ${what}, not an object, answers VALIDATION_ERROR`, async () => {
    assertError(await postUsers(rawBody), 400, "VALIDATION_ERROR");
  });
}

test("a body over 64 KiB answers VALIDATION_ERROR and creates nothing", async () => {
  const json = '{"partnerUserRef":"too-big"}';
  const before = await userCount();
  assertError(await postUsers(json + " ".repeat(64 * 1024 - json.length + 1)), 400, "VALIDATION_ERROR");
  assert.equal(await userCount(), before);
});

test("a body of exactly 64 KiB is read", async () => {
  const json = '{"partnerUserRef":"just-fits"}';
  assertStatus(await postUsers(json + " ".repeat(64 * 1024 - json.length)), 201);
});

test("a body sent as text/plain answers VALIDATION_ERROR and creates nothing", async () => {
  const before = await userCount();
  assertError(await postUsers('{"partnerUserRef":"plain-text"}', { "Content-Type": "text/plain" }), 400, "VALIDATION_ERROR");
  assert.equal(await userCount(), before);
});

test("a form-encoded body answers VALIDATION_ERROR", async () => {
  assertError(await postUsers("partnerUserRef=form", { "Content-Type": "application/x-www-form-urlencoded" }), 400, "VALIDATION_ERROR");
});

test("application/json with a charset is accepted", async () => {
  assertStatus(await postUsers('{"partnerUserRef":"with-charset"}', { "Content-Type": "application/json; charset=utf-8" }), 201);
});

test("a body without any content where fields are required answers VALIDATION_ERROR", async () => {
  assertError(await service.api("POST", "/users", { key: partner.apiKey }), 400, "VALIDATION_ERROR");
});

test("a __proto__ key in the body answers VALIDATION_ERROR", async () => {
  assertError(await postUsers('{"partnerUserRef":"proto","__proto__":{"admin":true}}'), 400, "VALIDATION_ERROR");
});

test("an unknown query parameter answers VALIDATION_ERROR", async () => {
  assertError(await service.api("GET", "/health?verbose=1", { key: partner.apiKey }), 400, "VALIDATION_ERROR");
});

test("an unknown route with a valid key answers 404 NOT_FOUND", async () => {
  assertError(await service.api("GET", "/no-such-thing", { key: partner.apiKey }), 404, "NOT_FOUND");
});

test("an unsupported method on a known path answers 404 NOT_FOUND", async () => {
  assertError(await service.api("DELETE", "/health", { key: partner.apiKey }), 404, "NOT_FOUND");
});

test("an unknown route without a key answers 401 MISSING_API_KEY", async () => {
  assertError(await service.api("GET", "/no-such-thing"), 401, "MISSING_API_KEY");
});

test("every response carries an X-Request-Id, errors included", async () => {
  const responses = [
    await service.api("GET", "/health", { key: partner.apiKey }),
    await service.api("GET", "/health"),
    await postUsers("{"),
    await service.api("GET", "/nothing", { key: partner.apiKey }),
    await service.admin("GET", "/partners/ptn_missing"),
    await fetch(`${service.baseUrl}/healthz`).then((response) => ({ headers: response.headers })),
  ];
  const ids = responses.map((response) => response.headers.get("X-Request-Id"));
  for (const id of ids) assert.match(String(id), /^\S{8,}$/);
  assert.equal(new Set(ids).size, ids.length, "request ids are unique");
});

test("a caller's X-Request-Id is echoed back", async () => {
  const response = await service.api("GET", "/health", { key: partner.apiKey, headers: { "X-Request-Id": "trace-abc.123" } });
  assert.equal(response.headers.get("X-Request-Id"), "trace-abc.123");
});
