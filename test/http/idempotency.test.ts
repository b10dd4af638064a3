import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { holdUserCreation } from "../support/database.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startPgFront } from "../support/wire-count.ts";

// Decisions section 11: `Idempotency-Key` on the POSTs; a repeat within 24 hours with the same body
// returns the first response; the same key with a different body is 409 IDEMPOTENCY_KEY_REUSED.
let service: TestService;
let partner: { id: string; apiKey: string };
let sequence = 0;

before(async () => {
  service = await startTestService();
  partner = await service.createPartner({ tier: "ENTERPRISE" });
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "seller" } }), 201);
});
after(() => service.close());

function freshKey(): string {
  sequence += 1;
  return `idem-${sequence}-${Date.now()}`;
}

function post(path: string, body: unknown, idempotencyKey: string | undefined, apiKey = partner.apiKey) {
  return service.api("POST", path, { key: apiKey, body, headers: idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {} });
}

async function count(sql: string, ...values: unknown[]): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>(sql, values);
  return Number(rows[0]!.n);
}

test("a repeat of POST /users with the same key and body returns the first response and creates one user", async () => {
  const key = freshKey();
  const first = await post("/users", { partnerUserRef: "idem-user" }, key);
  const repeat = await post("/users", { partnerUserRef: "idem-user" }, key);
  assertStatus(first, 201);
  assertStatus(repeat, 201);
  assert.deepEqual(repeat.body, first.body);
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-user'"), 1);
});

test("a repeat of POST /quotes with the same key and body returns the same quote and creates one", async () => {
  const key = freshKey();
  const body = { type: "SELL", amountUsdc: 25, partnerUserRef: "seller" };
  const before = await count("SELECT count(*) AS n FROM quotes");
  const first = await post("/quotes", body, key);
  const repeat = await post("/quotes", body, key);
  assertStatus(first, 201);
  assert.deepEqual(repeat.body, first.body);
  assert.equal(await count("SELECT count(*) AS n FROM quotes"), before + 1);
});

test("without an Idempotency-Key two identical POST /quotes create two quotes", async () => {
  const body = { type: "SELL", amountUsdc: 25, partnerUserRef: "seller" };
  const first = await post("/quotes", body, undefined);
  const second = await post("/quotes", body, undefined);
  assert.notEqual(first.body.id, second.body.id);
});

test("the same key with a different body answers 409 IDEMPOTENCY_KEY_REUSED and changes nothing", async () => {
  const key = freshKey();
  assertStatus(await post("/users", { partnerUserRef: "idem-first" }, key), 201);
  assertError(await post("/users", { partnerUserRef: "idem-second" }, key), 409, "IDEMPOTENCY_KEY_REUSED");
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-second'"), 0);
});

test("the same key on another route answers IDEMPOTENCY_KEY_REUSED", async () => {
  const key = freshKey();
  assertStatus(await post("/users", { partnerUserRef: "idem-route" }, key), 201);
  assertError(await post("/quotes", { type: "SELL", amountUsdc: 1, partnerUserRef: "idem-route" }, key), 409, "IDEMPOTENCY_KEY_REUSED");
});

test("concurrent requests with the same key and body all get the first response and create one user", async () => {
  const key = freshKey();
  const responses = await Promise.all(Array.from({ length: 8 }, () => post("/users", { partnerUserRef: "idem-race" }, key)));
  for (const response of responses) {
    assertStatus(response, 201);
    assert.deepEqual(response.body, responses[0]!.body);
  }
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-race'"), 1);
});

test("an error answer is replayed too: the repeat gets the first DUPLICATE_USER even after the cause is gone", async () => {
  assertStatus(await post("/users", { partnerUserRef: "idem-dup" }, undefined), 201);
  const key = freshKey();
  assertError(await post("/users", { partnerUserRef: "idem-dup" }, key), 409, "DUPLICATE_USER");
  await service.pool.query("DELETE FROM users WHERE partner_user_ref = 'idem-dup'");
  assertError(await post("/users", { partnerUserRef: "idem-dup" }, key), 409, "DUPLICATE_USER");
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-dup'"), 0);
});

test("keys belong to one partner: another partner's request with the same key is processed on its own", async () => {
  const other = await service.createPartner();
  const key = freshKey();
  const mine = await post("/users", { partnerUserRef: "idem-shared" }, key);
  const theirs = await post("/users", { partnerUserRef: "idem-shared" }, key, other.apiKey);
  assertStatus(mine, 201);
  assertStatus(theirs, 201);
  assert.notEqual(theirs.body.id, mine.body.id);
});

test("a key older than 24 hours no longer replays: the request is processed afresh", async () => {
  const key = freshKey();
  assertStatus(await post("/users", { partnerUserRef: "idem-old" }, key), 201);
  await service.pool.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [key]);
  assertError(await post("/users", { partnerUserRef: "idem-old" }, key), 409, "DUPLICATE_USER");
});

test("an Idempotency-Key longer than 255 characters answers VALIDATION_ERROR and creates nothing", async () => {
  assertError(await post("/users", { partnerUserRef: "idem-long" }, "k".repeat(256)), 400, "VALIDATION_ERROR");
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-long'"), 0);
});

test("a repeat that arrives while the first request is still running waits for it and gets its answer", async () => {
  const key = freshKey();
  const hold = await holdUserCreation(service.pool, partner.id, "idem-wait");
  const first = post("/users", { partnerUserRef: "idem-wait" }, key);
  await hold.inHandler();
  const repeat = post("/users", { partnerUserRef: "idem-wait" }, key);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await hold.release();
  const [firstAnswer, repeatAnswer] = await Promise.all([first, repeat]);
  assertStatus(firstAnswer, 201);
  assertStatus(repeatAnswer, 201);
  assert.deepEqual(repeatAnswer.body, firstAnswer.body);
  assert.equal(repeatAnswer.headers.get("idempotent-replayed"), "true");
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-wait'"), 1);
});

test("a repeat still waiting after 10 seconds answers 409 IDEMPOTENCY_KEY_REUSED, and the first request still completes", async () => {
  const key = freshKey();
  const hold = await holdUserCreation(service.pool, partner.id, "idem-slow");
  const first = post("/users", { partnerUserRef: "idem-slow" }, key);
  await hold.inHandler();
  try {
    const repeat = await post("/users", { partnerUserRef: "idem-slow" }, key);
    assertError(repeat, 409, "IDEMPOTENCY_KEY_REUSED");
    assert.match(String(repeat.body.message), /still being processed/);
  } finally {
    await hold.release();
  }
  assertStatus(await first, 201);
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-slow'"), 1);
});

test("a claim committed without an answer (left by the version that committed claims first) is taken by the next request", async () => {
  const key = freshKey();
  await service.pool.query("INSERT INTO idempotency_keys (partner_id, key, request_hash) VALUES ($1, $2, 'left by a killed process')", [partner.id, key]);
  assertStatus(await post("/users", { partnerUserRef: "idem-orphan" }, key), 201);
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-orphan'"), 1);
});

test("when the commit ran but its answer was lost, the request answers 503, and the retry with its key answers the change it made, made once", async () => {
  // A second instance on the same database, through a front that withholds the answer of the commit
  // that inserts the user (a database killed at that moment, a network cut).
  const front = await startPgFront(service.databaseUrl);
  const instance = await startTestService({}, { databaseUrl: front.url });
  try {
    const key = freshKey();
    const lost = front.loseAnswer((statement, transaction) => /^\s*commit\b/i.test(statement) && transaction.some((earlier) => /^\s*insert into users\b/i.test(earlier)));
    const send = () => instance.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "idem-commit-unheard" }, headers: { "Idempotency-Key": key } });
    const unheard = await send();
    assert.ok(await Promise.race([lost.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 1_000))]), "the commit's answer was withheld");
    assertError(unheard, 503, "SERVICE_UNAVAILABLE");
    assert.ok(Number(unheard.headers.get("retry-after")) > 0, "Retry-After");
    const { rows } = await service.pool.query<{ id: string }>("SELECT id FROM users WHERE partner_id = $1 AND partner_user_ref = 'idem-commit-unheard'", [partner.id]);
    assert.equal(rows.length, 1, "the commit ran");
    const retry = await send();
    assertStatus(retry, 201);
    assert.equal((retry.body as { id: string }).id, rows[0]!.id, "the retry answers the user the lost commit made");
    assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-commit-unheard'"), 1);
  } finally {
    await instance.close();
    await front.close();
  }
});

test("when the answer cannot be committed, the change is not made and the request answers 500, so the retry runs it", async () => {
  const key = freshKey();
  // The answer's write fails (as a lost session would), after the handler has created the user.
  await service.pool.query(`CREATE FUNCTION test_refuse_answer() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'answer refused'; END $$`);
  await service.pool.query(`CREATE TRIGGER test_refuse_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW
    WHEN (NEW.response_status IS NOT NULL) EXECUTE FUNCTION test_refuse_answer()`);
  let failed;
  try {
    failed = await post("/users", { partnerUserRef: "idem-unkept" }, key);
  } finally {
    await service.pool.query("DROP TRIGGER test_refuse_answer ON idempotency_keys");
    await service.pool.query("DROP FUNCTION test_refuse_answer()");
  }
  assert.equal(failed.status, 500);
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-unkept'"), 0, "no user without its answer");
  assertStatus(await post("/users", { partnerUserRef: "idem-unkept" }, key), 201);
  assert.equal(await count("SELECT count(*) AS n FROM users WHERE partner_user_ref = 'idem-unkept'"), 1);
});
