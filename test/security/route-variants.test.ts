// Decisions section 19: routes match their path exactly, letter case and trailing slash included, and
// authentication belongs to the routers themselves. Every route of every surface (partner, sandbox, market, dashboard,
// admin, console, docs) is tried under path variants an attacker would write, with and without
// credentials: none may answer 2xx, and none may change data.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { after, before, test } from "node:test";
import pg from "pg";
import { ADMIN_TOKEN, type TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";

let service: TestService;
let partnerKey: string;

before(async () => {
  service = await startOfflineOrderService();
  partnerKey = (await service.createPartner({ tier: "GROWTH", kycModel: "PARTNER_MANAGED" })).apiKey;
});
after(() => service.close());

interface RawResponse {
  status: number;
  body: string;
}

/** Sends the path byte for byte (fetch would normalise dot segments and encodings). */
function rawRequest(method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  const url = new URL(service.baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } : {}) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

const upperFirst = (word: string) => (word ? word[0]!.toUpperCase() + word.slice(1) : word);
const encodeFirst = (word: string) => (word ? `%${word.charCodeAt(0).toString(16)}${word.slice(1)}` : word);

/** The variants of a concrete path (`/api/v1/users/x`) that must reach no handler. */
function pathVariants(path: string): string[] {
  const segments = path.split("/").slice(1);
  const literal = segments.length - 1 - [...segments].reverse().findIndex((segment) => /^[a-z-]+$/.test(segment));
  const withSegment = (index: number, change: (word: string) => string) =>
    `/${segments.map((segment, i) => (i === index ? change(segment) : segment)).join("/")}`;
  const variants = new Set([
    path.toUpperCase(),
    withSegment(0, (word) => word.toUpperCase()),
    withSegment(0, upperFirst),
    withSegment(1, (word) => word.toUpperCase()),
    withSegment(literal, upperFirst),
    withSegment(literal, (word) => word.toUpperCase()),
    `${path}/`,
    `${path}//`,
    withSegment(0, encodeFirst),
    withSegment(literal, encodeFirst),
    `/${segments[0]}%2F${segments.slice(1).join("/")}`,
    `/${segments[0]}//${segments.slice(1).join("/")}`,
    `/${segments[0]}/./${segments.slice(1).join("/")}`,
    `/${segments[0]}/%2e/${segments.slice(1).join("/")}`,
    `/x/%2e%2e/${segments.join("/")}`,
    `${path};`,
    `${path}%00`,
    `${path}%20`,
  ]);
  variants.delete(path);
  return [...variants];
}

interface Route {
  method: string;
  path: string;
}

async function routesOf(documentPath: string, prefix: string): Promise<Route[]> {
  const response = await fetch(`${service.baseUrl}${documentPath}`);
  const document = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path: `${prefix}${path.replace(/\{[^}]+\}/g, "x")}` })),
  );
}

async function snapshot(): Promise<string> {
  const client = new pg.Client({ connectionString: service.databaseUrl });
  await client.connect();
  try {
    const hash = createHash("sha256");
    // Every table that holds what a route could change; rate-limit windows count requests by design.
    for (const table of ["partners", "users", "quotes", "idempotency_keys", "orders", "order_timeline", "chain_transactions", "webhook_events", "webhook_deliveries", "kyc_sessions"]) {
      const { rows } = await client.query(`SELECT to_jsonb(t)::text AS row FROM ${table} t ORDER BY 1`);
      hash.update(`${table}:${rows.map((row: { row: string }) => row.row).join("\n")}\n`);
    }
    return hash.digest("hex");
  } finally {
    await client.end();
  }
}

test("GET /ADMIN/v1/partners without a token is 404 and lists nothing", async () => {
  const response = await rawRequest("GET", "/ADMIN/v1/partners", {});
  assert.equal(response.status, 404);
  assert.deepEqual(JSON.parse(response.body), { error: "NOT_FOUND", message: "No route for GET /ADMIN/v1/partners" });
});

test("/API/V1/exchange-rate reaches no handler and uses no partner key", async () => {
  const response = await rawRequest("GET", "/API/V1/exchange-rate", {});
  assert.equal(response.status, 404);
  assert.equal(JSON.parse(response.body).error, "NOT_FOUND");
});

test("an unknown path under /api/v1 is authenticated first: 401 without a key, 404 with one, counted either way", async () => {
  const anonymous = await fetch(`${service.baseUrl}/api/v1/no-such-route`);
  assert.equal(anonymous.status, 401);
  assert.ok(anonymous.headers.get("X-RateLimit-Limit"));
  const keyed = await fetch(`${service.baseUrl}/api/v1/no-such-route`, { headers: { "X-API-Key": partnerKey } });
  assert.equal(keyed.status, 404);
  assert.equal(keyed.headers.get("X-RateLimit-Limit"), "200");
});

test("a known partner path with another method is 401 without a key and 404 with one", async () => {
  assert.equal((await fetch(`${service.baseUrl}/api/v1/health`, { method: "DELETE" })).status, 401);
  assert.equal((await fetch(`${service.baseUrl}/api/v1/health`, { method: "DELETE", headers: { "X-API-Key": partnerKey } })).status, 404);
});

test("an unknown admin path is 401 without the token", async () => {
  const response = await fetch(`${service.baseUrl}/admin/v1/no-such-route`);
  assert.equal(response.status, 401);
  assert.equal(((await response.json()) as { error: string }).error, "UNAUTHORIZED");
});

for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "..%2Fconsole%2Froutes.ts"]) {
  test(`the console's asset route answers 404 for "${name}"`, async () => {
    const response = await rawRequest("GET", `/admin/assets/${name}`, {});
    assert.equal(response.status, 404);
    assert.equal(JSON.parse(response.body).error, "NOT_FOUND");
  });
  test(`the API reference's asset route answers 404 for "${name}"`, async () => {
    const response = await rawRequest("GET", `/docs/assets/${name}`, {});
    assert.equal(response.status, 404);
  });
}

// Last: its anonymous requests use up the per-address window the tests above rely on.
test("no path variant of any route answers 2xx or changes data, with or without credentials", async () => {
  const partnerRoutes = await routesOf("/api/v1/openapi.json", "/api/v1");
  const adminRoutes = await routesOf("/admin/v1/openapi.json", "/admin/v1");
  const marketRoutes = await routesOf("/market/v1/openapi.json", "/market/v1");
  const dashboardRoutes = await routesOf("/dashboard/v1/openapi.json", "/dashboard/v1");
  const pages: Route[] = [
    { method: "GET", path: "/market" },
    { method: "GET", path: "/dashboard" },
    { method: "GET", path: "/admin" },
    { method: "GET", path: "/admin/assets/console.js" },
    { method: "GET", path: "/docs" },
    { method: "GET", path: "/api/v1/openapi.json" },
    { method: "GET", path: "/admin/v1/openapi.json" },
    { method: "POST", path: "/callbacks/kyc" },
  ];
  assert.ok(partnerRoutes.some((route) => route.path.startsWith("/api/v1/sandbox/")), "the sandbox routes are in the matrix");
  assert.ok(adminRoutes.some((route) => route.path === "/admin/v1/orders/x/resolve"), "the admin resolve route is in the matrix");
  const credentials: Record<string, string>[] = [{}, { "X-API-Key": partnerKey }, { Authorization: `Bearer ${ADMIN_TOKEN}` }];

  const before = await snapshot();
  let tried = 0;
  const successes: string[] = [];
  assert.ok(marketRoutes.length > 5 && dashboardRoutes.length > 10, "the market and dashboard routes are in the matrix");
  for (const route of [...partnerRoutes, ...adminRoutes, ...marketRoutes, ...dashboardRoutes, ...pages]) {
    for (const variant of pathVariants(route.path)) {
      for (const headers of credentials) {
        const body = route.method === "GET" ? undefined : JSON.stringify({ status: "INACTIVE", outcome: "BUYER", by: "BUYER" });
        const response = await rawRequest(route.method, variant, headers, body);
        tried += 1;
        if (response.status >= 200 && response.status < 300) successes.push(`${route.method} ${variant} (${Object.keys(headers)[0] ?? "no credentials"}): ${response.status}`);
        assert.ok(response.status < 500, `${route.method} ${variant}: ${response.status} ${response.body}`);
      }
    }
  }
  assert.deepEqual(successes, []);
  assert.equal(await snapshot(), before, "a path variant changed data");
  assert.ok(tried > 1000, `only ${tried} requests tried`);
  console.log(`route matrix: ${partnerRoutes.length + adminRoutes.length + marketRoutes.length + dashboardRoutes.length + pages.length} routes x variants x 3 credential sets = ${tried} requests, 0 answered 2xx`);
});
