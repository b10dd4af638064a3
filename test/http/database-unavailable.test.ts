import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import type { PoolClient } from "../../src/db/pool.ts";
import { databaseUnavailable, POOL_WAIT_MS } from "../../src/db/pool.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Decisions section 19: each instance's PostgreSQL pools wait a bounded time for a session and answer
// 503 past it, with Retry-After, instead of waiting without end or answering 500.
let service: TestService;
let key: string;

before(async () => {
  service = await startTestService();
  key = (await service.createPartner()).apiKey;
  assertStatus(await service.api("POST", "/users", { key, body: { partnerUserRef: "seller" } }), 201);
});
after(() => service.close());

/** Takes every session of the service's pool, as requests stuck on slow queries would. */
async function holdEveryPoolSession<T>(work: () => Promise<T>): Promise<T> {
  const held: PoolClient[] = [];
  const max = (service.pool.options as { max?: number }).max ?? 10;
  try {
    while (held.length < max) held.push(await service.pool.connect());
    return await work();
  } finally {
    for (const session of held) session.release();
  }
}

test("a request that gets no database session within the pool's wait answers 503 SERVICE_UNAVAILABLE with Retry-After", { timeout: 30_000 }, async () => {
  const started = Date.now();
  const response = await holdEveryPoolSession(() =>
    service.api("GET", "/users/seller", { key }).then((answer) => ({ answer, ms: Date.now() - started })),
  );
  assertError(response.answer, 503, "SERVICE_UNAVAILABLE");
  assert.ok(Number(response.answer.headers.get("Retry-After")) > 0, "Retry-After in seconds");
  assert.ok(response.ms < POOL_WAIT_MS + 3_000, `answered after ${response.ms} ms`);
  // Once sessions are free again the same request is served.
  assertStatus(await service.api("GET", "/users/seller", { key }), 200);
});

test("the OpenAPI document lists 503 SERVICE_UNAVAILABLE with Retry-After on every operation", async () => {
  const document = (await service.api("GET", "/openapi.json")).body as { paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown>; description: string }> }>> };
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const unavailable = operation.responses["503"];
      assert.ok(unavailable?.description.includes("SERVICE_UNAVAILABLE"), `${method} ${path}`);
      assert.ok(unavailable?.headers?.["Retry-After"], `${method} ${path}: Retry-After`);
    }
  }
});

// Found by the chaos run of stop 42: PostgreSQL killed while a POST /orders held its session between two
// statements; the next one failed with pg's "not queryable" error, which carries no code, and the request
// answered 500 instead of 503.
test("a session whose connection was cut between two statements of a request counts as the database unavailable (503)", async () => {
  const session = new pg.Client({ connectionString: service.databaseUrl });
  // `on`, not `once`: after the server's FATAL, pg can emit a second error when the socket ends ("Connection
  // terminated unexpectedly"), which without a listener is thrown (seen once in CI).
  const lost = new Promise((resolve) => session.on("error", resolve));
  await session.connect();
  try {
    const { rows } = await session.query<{ pid: number }>("BEGIN; SELECT pg_backend_pid() AS pid").then((results) => (results as unknown as pg.QueryResult<{ pid: number }>[])[1]!);
    await service.pool.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
    await lost;
    const refused = await session.query("SELECT 1").then(() => undefined, (error: unknown) => error);
    assert.match(String((refused as Error).message), /not queryable/);
    assert.equal(databaseUnavailable(refused), true);
  } finally {
    await session.end().catch(() => undefined);
  }
});
