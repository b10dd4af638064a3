import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { assertError, assertStatus, ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Decisions section 10: the central bank's FIX (SIE API) first, the fallback provider when SIE answers
// N/E or fails, cached RATE_VALIDITY_SECONDS in the database for every instance, and RATE_UNAVAILABLE when
// both fail and no rate is younger than one hour.
let service: TestService;
let key: string;

before(async () => {
  service = await startTestService({ RATE_VALIDITY_SECONDS: "120" });
  key = (await service.createPartner({ tier: "ENTERPRISE" })).apiKey;
});
beforeEach(async () => {
  service.simulators!.banxico.setMode("normal");
  service.simulators!.banxico.setRate("17.2500");
  service.simulators!.fallbackRate.setMode("normal");
  service.simulators!.fallbackRate.setRate("17.3100");
  await service.pool.query("DELETE FROM exchange_rates");
});
after(() => service.close());

const rate = () => service.api("GET", "/exchange-rate", { key });

/** Makes the cached rate look fetched `seconds` ago. */
async function ageCachedRate(seconds: number): Promise<void> {
  await service.pool.query("UPDATE exchange_rates SET fetched_at = now() - make_interval(secs => $1)", [seconds]);
}

test("GET /exchange-rate answers usdMxn, source, timestamp and validFor = RATE_VALIDITY_SECONDS", async () => {
  const before = Date.now();
  const response = await rate();
  assertStatus(response, 200);
  assert.deepEqual(Object.keys(response.body).sort(), ["source", "timestamp", "usdMxn", "validFor"]);
  assert.equal(response.body.usdMxn, 17.25);
  assert.equal(response.body.source, "central_bank");
  assert.equal(response.body.validFor, 120);
  assert.match(String(response.body.timestamp), ISO_MILLIS);
  assert.ok(Date.parse(String(response.body.timestamp)) >= before - 1000);
});

test("the central bank's rate is served first, with source central_bank", async () => {
  service.simulators!.banxico.setRate("18.0123");
  const response = await rate();
  assert.equal(response.body.usdMxn, 18.0123);
  assert.equal(response.body.source, "central_bank");
});

test("when the central bank answers N/E the fallback provider's rate is served, with source fallback_provider", async () => {
  service.simulators!.banxico.setMode("no_determination");
  service.simulators!.fallbackRate.setRate("17.2537");
  const response = await rate();
  assertStatus(response, 200);
  assert.equal(response.body.usdMxn, 17.2537);
  assert.equal(response.body.source, "fallback_provider");
});

test("when the central bank is down the fallback provider's rate is served", async () => {
  service.simulators!.banxico.setMode("down");
  const response = await rate();
  assertStatus(response, 200);
  assert.equal(response.body.usdMxn, 17.31);
  assert.equal(response.body.source, "fallback_provider");
});

test("within its validity the cached rate is served without asking either provider again", async () => {
  await rate();
  const banxicoCalls = service.simulators!.banxico.requests();
  const fallbackCalls = service.simulators!.fallbackRate.requests();
  service.simulators!.banxico.setRate("19.0000");
  for (let i = 0; i < 5; i += 1) assert.equal((await rate()).body.usdMxn, 17.25);
  assert.equal(service.simulators!.banxico.requests(), banxicoCalls);
  assert.equal(service.simulators!.fallbackRate.requests(), fallbackCalls);
});

test("concurrent requests with an empty cache ask the central bank once", async () => {
  const banxicoCalls = service.simulators!.banxico.requests();
  const responses = await Promise.all(Array.from({ length: 8 }, () => rate()));
  for (const response of responses) assertStatus(response, 200);
  assert.equal(service.simulators!.banxico.requests(), banxicoCalls + 1);
  assert.equal(new Set(responses.map((response) => response.body.timestamp)).size, 1);
});

test("a second instance on the same database serves the cached rate without asking its providers", async () => {
  const second = await startTestService({ RATE_VALIDITY_SECONDS: "120" }, { databaseUrl: service.databaseUrl });
  try {
    const first = await rate();
    const fromSecond = await second.api("GET", "/exchange-rate", { key });
    assertStatus(fromSecond, 200);
    assert.deepEqual(fromSecond.body, first.body);
    assert.equal(second.simulators!.banxico.requests(), 0);
    assert.equal(second.simulators!.fallbackRate.requests(), 0);
  } finally {
    await second.close();
  }
});

test("after RATE_VALIDITY_SECONDS the rate is fetched again", async () => {
  await rate();
  await ageCachedRate(121);
  service.simulators!.banxico.setRate("17.9000");
  const calls = service.simulators!.banxico.requests();
  const response = await rate();
  assert.equal(response.body.usdMxn, 17.9);
  assert.equal(service.simulators!.banxico.requests(), calls + 1);
});

test("with both sources down a rate younger than an hour is still served, with its own timestamp", async () => {
  await rate();
  await ageCachedRate(30 * 60);
  service.simulators!.banxico.setMode("down");
  service.simulators!.fallbackRate.setMode("down");
  const response = await rate();
  assertStatus(response, 200);
  assert.equal(response.body.usdMxn, 17.25);
  assert.equal(response.body.source, "central_bank");
  const { rows } = await service.pool.query<{ fetched_at: Date }>("SELECT fetched_at FROM exchange_rates");
  assert.equal(response.body.timestamp, rows[0]!.fetched_at.toISOString());
  assert.ok(Date.now() - Date.parse(String(response.body.timestamp)) >= 30 * 60 * 1000);
});

test("with both sources down and the last rate older than an hour, 502 RATE_UNAVAILABLE", async () => {
  await rate();
  await ageCachedRate(61 * 60);
  service.simulators!.banxico.setMode("down");
  service.simulators!.fallbackRate.setMode("down");
  assertError(await rate(), 502, "RATE_UNAVAILABLE");
});

test("with the central bank at N/E, the fallback down and no rate ever fetched, 502 RATE_UNAVAILABLE", async () => {
  service.simulators!.banxico.setMode("no_determination");
  service.simulators!.fallbackRate.setMode("down");
  assertError(await rate(), 502, "RATE_UNAVAILABLE");
});
