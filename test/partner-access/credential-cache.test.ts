import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Queryable } from "../../src/db/pool.ts";
import { CREDENTIAL_TTL_MS, createPartnerCredentials } from "../../src/partners/credential-cache.ts";
import { apiKeyDigest, hashApiKey } from "../../src/partners/credentials.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Partners are cached in memory by key hash (issue 15): a change is forgotten at once by the instance
// that made it, and by the others when PostgreSQL delivers the partners trigger's notification.
let one: TestService;
let two: TestService;

before(async () => {
  one = await startTestService();
  two = await startTestService({}, { databaseUrl: one.databaseUrl });
});
after(async () => {
  await two.close();
  await one.close();
});

/** Polls until `check` holds; returns the milliseconds it took. */
async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

test("a rotated key stops working at once on the instance that rotated it", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  assertStatus(await one.api("GET", "/health", { key: partner.apiKey }), 200);
  const rotated = await one.admin<{ apiKey: string }>("POST", `/partners/${partner.id}/api-keys`);
  assert.equal(rotated.status, 201);
  assertError(await one.api("GET", "/health", { key: partner.apiKey }), 401, "INVALID_API_KEY");
  assertStatus(await one.api("GET", "/health", { key: rotated.body.apiKey }), 200);
});

test("a rotated key stops working on another instance within the notification delay, well before the cache's TTL", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  assertStatus(await two.api("GET", "/health", { key: partner.apiKey }), 200);
  const rotated = await one.admin<{ apiKey: string }>("POST", `/partners/${partner.id}/api-keys`);
  const took = await within(1_000, "the old key refused by the other instance", async () => (await two.api("GET", "/health", { key: partner.apiKey })).status === 401);
  assert.ok(took < CREDENTIAL_TTL_MS);
  assertStatus(await two.api("GET", "/health", { key: rotated.body.apiKey }), 200);
});

test("a change written straight to the database (any writer: CLI, psql) reaches every instance", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  for (const service of [one, two]) assertStatus(await service.api("GET", "/health", { key: partner.apiKey }), 200);
  await one.pool.query("UPDATE partners SET kyb_status = 'SUSPENDED' WHERE id = $1", [partner.id]);
  for (const service of [one, two]) {
    await within(1_000, "the suspension seen", async () => JSON.stringify((await service.api("GET", "/health", { key: partner.apiKey })).body).includes("PARTNER_SUSPENDED"));
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "PARTNER_SUSPENDED");
  }
  await one.pool.query("UPDATE partners SET kyb_status = 'APPROVED', ip_allow_list = '{203.0.113.9}' WHERE id = $1", [partner.id]);
  for (const service of [one, two]) {
    await within(1_000, "the allow-list seen", async () => JSON.stringify((await service.api("GET", "/health", { key: partner.apiKey })).body).includes("IP_NOT_ALLOWED"));
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "IP_NOT_ALLOWED");
  }
});

test("a tier change through the admin API takes effect at once on that instance", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  assert.equal((await one.api("GET", "/health", { key: partner.apiKey })).headers.get("X-RateLimit-Limit"), "200");
  assert.equal((await one.admin("PATCH", `/partners/${partner.id}`, { tier: "FREE" })).status, 200);
  assert.equal((await one.api("GET", "/health", { key: partner.apiKey })).headers.get("X-RateLimit-Limit"), "50");
});

/** The service's own pool with each query counted: what reached the database. */
function counting(db: Queryable) {
  const counter = {
    queries: 0,
    query: ((...args: Parameters<Queryable["query"]>) => {
      counter.queries += 1;
      return (db.query as (...a: unknown[]) => unknown)(...args);
    }) as Queryable["query"],
  };
  return counter;
}

test("a known key is answered from memory; an unknown key is looked up every time and never kept", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  const db = counting(one.pool);
  const credentials = createPartnerCredentials({ db, databaseUrl: one.databaseUrl });
  try {
    await credentials.ready;
    for (let i = 0; i < 100; i += 1) assert.equal((await credentials.find(apiKeyDigest(partner.apiKey)))?.id, partner.id);
    assert.equal(db.queries, 1);

    const unknown = `ofrk_${"7e".repeat(32)}`;
    for (let i = 0; i < 3; i += 1) assert.equal(await credentials.find(apiKeyDigest(unknown)), undefined);
    assert.equal(db.queries, 4);
    // Had the miss been kept, this key would stay refused after it became a partner's key.
    await one.pool.query("UPDATE partners SET api_key_hash = $2 WHERE id = $1", [partner.id, hashApiKey(unknown)]);
    assert.equal((await credentials.find(apiKeyDigest(unknown)))?.id, partner.id);
  } finally {
    await credentials.stop();
  }
});

test("without its listener, a cached partner is read again once the TTL has passed", async () => {
  const partner = await one.createPartner({ tier: "GROWTH" });
  let now = Date.now();
  const unreachable = new URL(one.databaseUrl);
  unreachable.pathname = "/no_such_database";
  const credentials = createPartnerCredentials({ db: one.pool, databaseUrl: unreachable.toString(), ttlMs: 5_000, now: () => now });
  try {
    await credentials.ready;
    assert.equal((await credentials.find(apiKeyDigest(partner.apiKey)))?.status, "ACTIVE");
    await one.pool.query("UPDATE partners SET status = 'INACTIVE' WHERE id = $1", [partner.id]);
    now += 5_000;
    assert.equal((await credentials.find(apiKeyDigest(partner.apiKey)))?.status, "INACTIVE");
  } finally {
    await credentials.stop();
  }
});
