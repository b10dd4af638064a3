import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// An unexpected failure (here: the users table is renamed away under the running service) answers
// 500 INTERNAL_ERROR with nothing internal in the body (decisions section 11).
let service: TestService;
let key: string;

before(async () => {
  service = await startTestService();
  key = (await service.createPartner()).apiKey;
});
after(() => service.close());

async function withUsersTableGone<T>(work: () => Promise<T>): Promise<T> {
  await service.pool.query("ALTER TABLE users RENAME TO users_gone");
  try {
    return await work();
  } finally {
    await service.pool.query("ALTER TABLE users_gone RENAME TO users");
  }
}

test("an unexpected failure answers 500 INTERNAL_ERROR in the spec's error shape, leaking nothing", async () => {
  const response = await withUsersTableGone(() => service.api("POST", "/users", { key, body: { partnerUserRef: "fails" } }));
  assertError(response, 500, "INTERNAL_ERROR");
  const text = JSON.stringify(response.body).toLowerCase();
  for (const leak of ["users", "relation", "select", "insert", "postgres", "does not exist", "error:", ".ts", "stack"]) {
    assert.ok(!text.includes(leak), `the body mentions "${leak}": ${text}`);
  }
});

test("a 500 still carries X-Request-Id and the rate-limit headers", async () => {
  const response = await withUsersTableGone(() => service.api("GET", "/users/anyone", { key }));
  assert.equal(response.status, 500);
  assert.ok(response.headers.get("X-Request-Id"));
  assert.ok(response.headers.get("X-RateLimit-Remaining"));
});

test("a request that failed with 500 may be retried with the same Idempotency-Key once the fault is gone", async () => {
  const headers = { "Idempotency-Key": "retry-after-500" };
  const failed = await withUsersTableGone(() => service.api("POST", "/users", { key, body: { partnerUserRef: "retried" }, headers }));
  assertError(failed, 500, "INTERNAL_ERROR");
  const retried = await service.api("POST", "/users", { key, body: { partnerUserRef: "retried" }, headers });
  assertStatus(retried, 201);
  assert.equal(retried.body.partnerUserRef, "retried");
});
