import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { assertStatus } from "../support/assertions.ts";
import { TEST_SERVER_URL } from "../support/database.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Operators' unauthenticated routes: liveness, readiness (database reachable) and Prometheus metrics.
let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function get(path: string) {
  const response = await fetch(`${service.baseUrl}${path}`);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text };
}

/** Runs `work` while the service's database refuses new sessions and its API pool's sessions are cut. */
async function withDatabaseUnreachable<T>(work: () => Promise<T>): Promise<T> {
  const database = new URL(service.databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: TEST_SERVER_URL });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'offramp'", [database]);
    return await work();
  } finally {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    await admin.end();
  }
}

test("/healthz answers 200 without credentials", async () => {
  const response = await get("/healthz");
  assert.equal(response.status, 200);
  assert.deepEqual(JSON.parse(response.text), { status: "ok" });
});

test("/readyz answers 200 when the database is reachable", async () => {
  const response = await get("/readyz");
  assert.equal(response.status, 200);
  assert.equal(JSON.parse(response.text).database, "ok");
});

test("/readyz answers 503 while the database is unreachable, and the service keeps running", async () => {
  const unreachable = await withDatabaseUnreachable(() => get("/readyz"));
  assert.equal(unreachable.status, 503);
  assert.equal(JSON.parse(unreachable.text).database, "unreachable");
  assert.equal((await get("/healthz")).status, 200);
});

test("/readyz answers 200 again once the database is back", async () => {
  await withDatabaseUnreachable(() => get("/readyz"));
  assert.equal((await get("/readyz")).status, 200);
});

test("/metrics counts requests in http_requests_total by method, route template and status", async () => {
  const partner = await service.createPartner();
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "metric-user-7731" } }), 201);
  await service.api("GET", "/users/metric-user-7731", { key: partner.apiKey });
  await service.api("GET", "/users/metric-user-7731", { key: partner.apiKey });
  await service.api("GET", "/users/nobody-4412", { key: partner.apiKey });

  const metrics = await get("/metrics");
  assert.equal(metrics.status, 200);
  assert.match(metrics.headers.get("Content-Type") ?? "", /^text\/plain/);
  const line = (route: string, status: number) =>
    new RegExp(`^http_requests_total\\{method="GET",route="${route.replace(/[/:]/g, "\\$&")}",status="${status}"\\} (\\d+)$`, "m");
  assert.equal(line("/api/v1/users/:ref", 200).exec(metrics.text)?.[1], "2");
  assert.equal(line("/api/v1/users/:ref", 404).exec(metrics.text)?.[1], "1");
  assert.ok(!metrics.text.includes("metric-user-7731"), "raw paths must not become labels");
  // The counts are handed to prom-client at each scrape: a second scrape reports the same totals, not twice them.
  assert.equal(line("/api/v1/users/:ref", 200).exec((await get("/metrics")).text)?.[1], "2");
});

test("/metrics exposes request latencies in http_request_duration_seconds", async () => {
  const metrics = await get("/metrics");
  assert.match(metrics.text, /^http_request_duration_seconds_bucket\{.*route="\/api\/v1\/users\/:ref".*\} \d+$/m);
});
