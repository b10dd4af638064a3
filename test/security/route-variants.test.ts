// Decisions section 19: routes match their path exactly, letter case and trailing slash included, and
// authentication belongs to the routers themselves. Every route of every surface (partner, sandbox, market, dashboard,
// admin, console, docs) is tried under path variants an attacker would write, with and without
// credentials: none may answer 2xx, and none may change data.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { after, before, test } from "node:test";
import pg from "pg";
import { memberOf, type DashboardClient } from "../dashboard/support.ts";
import { signIn } from "../market/support.ts";
import { ADMIN_TOKEN, type TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";

let service: TestService;
let partnerKey: string;
/** The matrix's credentials: a partner whose request budget no matrix can use up, its dashboard member, a market buyer. */
let matrixPartner: { id: string; apiKey: string };
let marketToken: string;
let dashboard: DashboardClient;

// Behind one trusted proxy, every matrix request comes from its own address (X-Forwarded-For), so no
// per-address window (anonymous partner requests, admin failures, market sign-in) answers 429 before
// routing is judged.
let nextAddress = 1;
const freshAddress = () => `198.18.${Math.floor(nextAddress / 250) % 250}.${(nextAddress++ % 250) + 1}`;
// The market and dashboard sessions have per-session windows (decisions 19) that the matrix would use up:
// the service's clock moves a minute on every 100 requests, so no session window fills.
let minutesAhead = 0;
const clock = { now: () => Date.now() + minutesAhead * 60_000 };
const nextRequest = () => {
  if (nextAddress % 100 === 0) minutesAhead += 1;
  return freshAddress();
};

before(async () => {
  service = await startOfflineOrderService({ TRUST_PROXY: "1" }, { clock });
  partnerKey = (await service.createPartner({ tier: "GROWTH", kycModel: "PARTNER_MANAGED" })).apiKey;
  matrixPartner = await service.createPartner({ name: "Matrix Partner", tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", limits: { requestsPerMinute: 100000 } });
  marketToken = (await signIn({ service })).token;
  dashboard = await memberOf(service, matrixPartner.id, "OWNER");
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
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { "X-Forwarded-For": nextRequest(), ...headers, ...(body ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } : {}) },
      },
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
  /** The route as registered, parameters in braces (`/api/v1/users/{partnerUserRef}`). */
  template: string;
  /** The concrete path tried: every parameter `x`. */
  path: string;
}

async function routesOf(documentPath: string, prefix: string): Promise<Route[]> {
  const response = await fetch(`${service.baseUrl}${documentPath}`);
  const document = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({ method: method.toUpperCase(), template: `${prefix}${path}`, path: `${prefix}${path.replace(/\{[^}]+\}/g, "x")}` })),
  );
}

/**
 * A variant that only changed a parameter's value (`/orders/x;` for `/orders/{id}`) is the same route
 * asked for another resource, not a way around it. Compared on the raw path, as the routers match it.
 */
function sameRoute(variant: string, template: string): boolean {
  const got = variant.split("/");
  const want = template.split("/");
  return got.length === want.length && want.every((segment, i) => (/^\{[^}]+\}$/.test(segment) ? got[i] !== "" : got[i] === segment));
}

/** Who answered a request: the app or a router's fallback (no route), a router's guard, or a route's own stack. */
type Answer = "no route" | "guard" | "route";

// The guards attached to the routers: partner key, admin token, market session (401), and the dashboard
// session and CSRF check (401, 403). A 404 is "no route" only with the fallback's message: a route's own
// 404 (an unknown id) or 400 (its body or query validation) means the request reached that route.
const GUARD_REFUSALS = new Set(["401 MISSING_API_KEY", "401 INVALID_API_KEY", "401 UNAUTHORIZED", "403 CSRF_FAILED"]);

function answeredBy(response: RawResponse): Answer {
  let body: { error?: string; message?: string } = {};
  try {
    body = JSON.parse(response.body) as typeof body;
  } catch {
    return "route";
  }
  if (response.status === 404 && body.error === "NOT_FOUND" && body.message?.startsWith("No route for ")) return "no route";
  // The KYC callback checks its signature in its own handler (401 too): that answer is the route's.
  if (body.message?.startsWith("The KYC callback is refused")) return "route";
  if (GUARD_REFUSALS.has(`${response.status} ${body.error}`)) return "guard";
  return "route";
}

/** Every table of the service's schema but the request counters, which count refused requests by design. */
const COUNTERS = new Set(["rate_limit_windows", "dashboard_auth_failures"]);

async function snapshot(): Promise<{ tables: string[]; digest: string }> {
  const client = new pg.Client({ connectionString: service.databaseUrl });
  await client.connect();
  try {
    const { rows: names } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    const tables = names.map((row) => row.table_name).filter((name) => !COUNTERS.has(name));
    const hash = createHash("sha256");
    for (const table of tables) {
      const { rows } = await client.query<{ row: string }>(`SELECT to_jsonb(t)::text AS row FROM "${table}" t ORDER BY 1`);
      hash.update(`${table}:${rows.map((row) => row.row).join("\n")}\n`);
    }
    return { tables, digest: hash.digest("hex") };
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

/** The credentials a surface's routes take; the pages and the KYC callback take none. */
function ownCredentials(route: Route): string {
  if (route.template.startsWith("/api/v1/")) return "partner key";
  if (route.template.startsWith("/admin/v1/")) return "admin token";
  if (route.template.startsWith("/market/v1/")) return "market session";
  if (route.template.startsWith("/dashboard/v1/")) return "dashboard session";
  return "none";
}

// Sign-outs end the matrix's sessions: their controls go last.
const endsSession = (route: Route) => route.method === "DELETE" && route.template.endsWith("/session");

test("no path variant of any route reaches a handler or changes data, with any credentials; the exact paths do reach theirs", async () => {
  const partnerRoutes = await routesOf("/api/v1/openapi.json", "/api/v1");
  const adminRoutes = await routesOf("/admin/v1/openapi.json", "/admin/v1");
  const marketRoutes = await routesOf("/market/v1/openapi.json", "/market/v1");
  const dashboardRoutes = await routesOf("/dashboard/v1/openapi.json", "/dashboard/v1");
  const pages: Route[] = [
    { method: "GET", template: "/market", path: "/market" },
    { method: "GET", template: "/dashboard", path: "/dashboard" },
    { method: "GET", template: "/admin", path: "/admin" },
    { method: "GET", template: "/admin/assets/{name}", path: "/admin/assets/console.js" },
    { method: "GET", template: "/docs", path: "/docs" },
    { method: "GET", template: "/api/v1/openapi.json", path: "/api/v1/openapi.json" },
    { method: "GET", template: "/admin/v1/openapi.json", path: "/admin/v1/openapi.json" },
    { method: "POST", template: "/callbacks/kyc", path: "/callbacks/kyc" },
  ];
  assert.ok(partnerRoutes.some((route) => route.path.startsWith("/api/v1/sandbox/")), "the sandbox routes are in the matrix");
  assert.ok(adminRoutes.some((route) => route.path === "/admin/v1/orders/x/resolve"), "the admin resolve route is in the matrix");
  assert.ok(marketRoutes.length > 5 && dashboardRoutes.length > 10, "the market and dashboard routes are in the matrix");
  const routes = [...partnerRoutes, ...adminRoutes, ...marketRoutes, ...dashboardRoutes, ...pages];
  const credentialSets: Record<string, Record<string, string>> = {
    none: {},
    "partner key": { "X-API-Key": matrixPartner.apiKey },
    "admin token": { Authorization: `Bearer ${ADMIN_TOKEN}` },
    "market session": { Authorization: `Bearer ${marketToken}` },
    "dashboard session": { Cookie: dashboard.cookie!, "X-CSRF-Token": dashboard.csrfToken! },
  };
  const body = (route: Route) => (route.method === "GET" ? undefined : JSON.stringify({ status: "INACTIVE", outcome: "BUYER", by: "BUYER" }));

  const before = await snapshot();
  for (const table of ["partners", "orders", "dashboard_sessions", "partner_audit_log", "buyers", "market_sessions", "lock_permits", "webhook_delivery_attempts"]) {
    assert.ok(before.tables.includes(table), `${table} is in the snapshot`);
  }
  const statuses: Record<"variants" | "exact", Record<string, number>> = { variants: {}, exact: {} };
  const rateLimited: string[] = [];
  const send = async (route: Route, path: string, credentials: string) => {
    const response = await rawRequest(route.method, path, credentialSets[credentials]!, body(route));
    const seen = statuses[path === route.path ? "exact" : "variants"];
    seen[response.status] = (seen[response.status] ?? 0) + 1;
    const label = `${route.method} ${path} (${credentials}): ${response.status} ${response.body.slice(0, 160)}`;
    // This service has no chain node: a route that reads the chain (GET /admin/v1/signers) answers its
    // 503 CHAIN_UNAVAILABLE, which is the route's own answer; any other 5xx fails.
    assert.ok(response.status < 500 || (response.status === 503 && response.body.includes('"CHAIN_UNAVAILABLE"')), label);
    if (response.status === 429) rateLimited.push(label);
    return { answer: answeredBy(response), success: response.status >= 200 && response.status < 300, label };
  };

  const variants: { route: Route; sameRouteOtherId: boolean; credentials: string; answer: Answer; success: boolean; label: string }[] = [];
  for (const route of routes) {
    for (const variant of pathVariants(route.path)) {
      const sameRouteOtherId = sameRoute(variant, route.template);
      for (const credentials of Object.keys(credentialSets)) variants.push({ route, sameRouteOtherId, credentials, ...(await send(route, variant, credentials)) });
    }
  }
  // Taken before the exact-path controls (which reach their handlers), checked below.
  const afterVariants = await snapshot();

  // The exact paths, with each credential set, after the data check (with the right credentials they
  // reach their handlers); sign-outs last, as they end the matrix's sessions.
  const exact = new Map<Route, Record<string, Answer>>();
  for (const route of [...routes.filter((route) => !endsSession(route)), ...routes.filter(endsSession)]) {
    const answers: Record<string, Answer> = {};
    for (const credentials of Object.keys(credentialSets)) answers[credentials] = (await send(route, route.path, credentials)).answer;
    exact.set(route, answers);
  }
  assert.deepEqual(rateLimited, [], "no request was rate-limited before routing was judged");

  // A variant that changed the path's letters, slashes, dots or encoding reaches no route, whatever the
  // credentials. A parameter's other value (`x;`, `x%00` for `{id}`) is the same route for another
  // resource: it may reach it only where the exact path with the same credentials does (its guard passed).
  const reached = variants
    .filter((tried) => tried.success || (tried.answer === "route" && !(tried.sameRouteOtherId && exact.get(tried.route)![tried.credentials] === "route")))
    .map((tried) => tried.label);
  assert.deepEqual(reached, [], "no variant got further than its exact path");
  assert.equal(afterVariants.digest, before.digest, "a path variant changed data");
  // Positive control: each exact path reaches its route with its surface's credentials, as judged by
  // the same rule that judges the variants.
  const missed = routes.filter((route) => exact.get(route)![ownCredentials(route)] !== "route").map((route) => `${route.method} ${route.path}: ${JSON.stringify(exact.get(route))}`);
  assert.deepEqual(missed, [], "every exact path reaches its route with its own credentials");

  const tried = variants.length;
  const otherIds = variants.filter((variant) => variant.sameRouteOtherId).length;
  assert.ok(tried > 5000, `only ${tried} requests tried`);
  const sets = Object.keys(credentialSets).length;
  console.log(
    `route matrix: ${routes.length} routes x ${(tried / routes.length / sets).toFixed(1)} variants on average x ${sets} credential sets = ${tried} variant requests ` +
      `(${otherIds} the same route with another id) + ${routes.length * sets} exact-path controls; statuses ${JSON.stringify(statuses)}; ` +
      `variants: 0 answered 2xx, 0 got further than their exact path, 0 rate-limited; ${before.tables.length} tables unchanged`,
  );
});
