// Every answer a test gets from the partner, admin, market and dashboard APIs is checked against the
// OpenAPI document the same service serves (decisions section 20): its status must be documented for the
// operation (method and path template) and its body valid against that status's schema. An answer the
// document does not describe makes the fetch that got it throw, so the test that sent it fails.
//
// It wraps the process's global fetch (imported for its effect by test/support/service.ts, which every
// test starting a service imports), so every caller is checked: the support helpers, a test's own fetch,
// the SDK. Only answers under the four API prefixes are checked; the documents themselves, pages, /docs,
// /metrics, probes, simulators and callbacks are not API answers. A path that names no operation of its
// document (a test probing unknown routes) must answer what the group's fallback answers: 401, 403, 404
// or 429 in the error shape.
//
// Each test process counts what it checked; with OPENAPI_CHECK_TALLY set (scripts/test-service.ts sets
// it) it appends its counts to that file, one JSON line per process, so a run can add them up.
import { appendFileSync } from "node:fs";
import { after } from "node:test";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const API_PREFIXES = ["/api/v1", "/admin/v1", "/market/v1", "/dashboard/v1"] as const;
type Prefix = (typeof API_PREFIXES)[number];
const API_NAMES: Record<Prefix, string> = { "/api/v1": "partner", "/admin/v1": "admin", "/market/v1": "market", "/dashboard/v1": "dashboard" };

/** What an unknown path or method under an API prefix may answer: the group's guards, then its 404. */
const FALLBACK_STATUSES = new Set([401, 403, 404, 429]);

interface ResponseObject {
  description?: string;
  content?: Record<string, { schema?: Record<string, unknown> }>;
}
interface Operation {
  operationId?: string;
  responses: Record<string, ResponseObject>;
}
interface Document {
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
}
interface Route {
  template: string;
  pattern: RegExp;
  /** Literal characters of the template: `/orders/summary` wins over `/orders/{id}`. */
  literal: number;
  item: Record<string, Operation>;
}

export class OpenApiMismatchError extends Error {
  override name = "OpenApiMismatchError";
}

const ajv = addFormats(new Ajv({ allErrors: true, strict: true, strictRequired: false }));
// The documents keep ajv-only request keywords as `x-` extensions (src/http/openapi.ts): no constraint on answers.
ajv.addKeyword({ keyword: "x-maxDecimals", schemaType: "number" });
const validators = new Map<string, ValidateFunction>();

const counts = { checked: 0, byApi: {} as Record<string, number>, unknownRoute: 0, mismatches: [] as string[] };

function routesOf(document: Document | null): Route[] {
  if (!document) return [];
  return Object.entries(document.paths).map(([template, item]) => {
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith("{") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("");
    return { template, pattern: new RegExp(`^${source}$`), literal: template.replace(/\{[^}]+\}/g, "").length, item };
  });
}

const originalFetch: typeof fetch = globalThis.fetch;
/** Routes of each served document, by origin and prefix; an API the service does not mount has none. */
const documents = new Map<string, Promise<Route[]>>();

function loadRoutes(origin: string, prefix: Prefix): Promise<Route[]> {
  const key = `${origin}${prefix}`;
  let routes = documents.get(key);
  if (!routes) {
    routes = (async () => {
      const response = await originalFetch(`${key}/openapi.json`);
      if (response.status === 404) return routesOf(null);
      if (response.status !== 200) throw new OpenApiMismatchError(`${key}/openapi.json answered ${response.status}`);
      return routesOf((await response.json()) as Document);
    })();
    routes.catch(() => documents.delete(key));
    documents.set(key, routes);
  }
  return routes;
}

/** Forgets the documents of a service that stopped: another service may later listen on its port. */
export function forgetDocuments(baseUrl: string): void {
  const origin = new URL(baseUrl).origin;
  for (const key of documents.keys()) if (key.startsWith(`${origin}/`)) documents.delete(key);
}

function validatorFor(key: string, schema: Record<string, unknown>): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

const errorShape = {
  type: "object",
  required: ["error", "message"],
  properties: { error: { type: "string", pattern: "^[A-Z][A-Z_]+$" }, message: { type: "string" } },
};

/** Why the answer is not what the document says, or undefined when it is. */
function judge(routes: Route[], prefix: Prefix, method: string, path: string, status: number, contentType: string, text: string): string | undefined {
  const relative = path.slice(prefix.length);
  const route = routes.filter((candidate) => candidate.pattern.test(relative)).sort((a, b) => b.literal - a.literal)[0];
  const verb = method === "HEAD" ? "get" : method.toLowerCase();
  const operation = route?.item[verb];
  let body: unknown;
  if (text !== "") {
    if (!/^application\/(?:[\w.+-]+\+)?json\b/.test(contentType)) return `answers a ${contentType || "untyped"} body, not JSON`;
    try {
      body = JSON.parse(text);
    } catch {
      return "answers a body that is not valid JSON";
    }
  }
  if (!operation) {
    counts.unknownRoute += 1;
    if (!FALLBACK_STATUSES.has(status)) return `names no operation of the document, yet answers ${status} (an unknown route answers 401, 403, 404 or 429)`;
    const validate = validatorFor("fallback", errorShape);
    if (!validate(body)) return `names no operation of the document and its ${status} is not in the error shape: ${ajv.errorsText(validate.errors)}`;
    return undefined;
  }
  const where = `${verb.toUpperCase()} ${prefix}${route.template}`;
  const statusKey = [String(status), `${String(status)[0]}XX`, "default"].find((key) => key in operation.responses);
  if (!statusKey) return `status ${status} is not documented for ${where} (documented: ${Object.keys(operation.responses).join(", ")})`;
  const content = operation.responses[statusKey]!.content;
  if (!content) return text === "" ? undefined : `answers a body, but the document gives ${where} ${statusKey} none`;
  if (text === "") return method === "HEAD" ? undefined : `answers no body, but the document gives ${where} ${statusKey} one`;
  const schema = content["application/json"]?.schema;
  if (!schema) return `the document gives ${where} ${statusKey} no application/json schema`;
  const validate = validatorFor(`${prefix} ${verb} ${route.template} ${statusKey}`, schema);
  if (!validate(body)) return `the body does not match the document's schema for ${where} ${statusKey}: ${ajv.errorsText(validate.errors, { dataVar: "body" })}`;
  return undefined;
}

function apiPrefix(pathname: string): Prefix | undefined {
  return API_PREFIXES.find((prefix) => pathname.startsWith(`${prefix}/`) || pathname === prefix);
}

async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const prefix = apiPrefix(url.pathname);
  if (!prefix || url.pathname === `${prefix}/openapi.json`) return originalFetch(input, init);
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  // The document first: once a test has its answer the service may be stopped (or killed) at once.
  const routes = await loadRoutes(url.origin, prefix).catch((error: unknown) => error as Error);
  const response = await originalFetch(input, init);
  const known = routes instanceof Error ? await loadRoutes(url.origin, prefix) : routes;
  const text = await response.clone().text();
  const problem = judge(known, prefix, method, url.pathname, response.status, response.headers.get("content-type") ?? "", text);
  counts.checked += 1;
  counts.byApi[API_NAMES[prefix]] = (counts.byApi[API_NAMES[prefix]] ?? 0) + 1;
  if (problem) {
    const message = `Undocumented answer: ${method} ${url.pathname}${url.search} answered ${response.status}: ${problem}\n  body: ${text.slice(0, 600)}`;
    counts.mismatches.push(message);
    throw new OpenApiMismatchError(message);
  }
  return response;
}

const INSTALLED = Symbol.for("offramp.test.openapi-check");
const state = globalThis as unknown as Record<symbol, boolean>;
if (!state[INSTALLED]) {
  state[INSTALLED] = true;
  globalThis.fetch = checkedFetch as typeof fetch;
  after(() => {
    console.log(`openapi-check: ${counts.checked} API answers checked against the served documents (${Object.entries(counts.byApi).map(([api, n]) => `${api} ${n}`).join(", ") || "none"}; ${counts.unknownRoute} to unknown routes), ${counts.mismatches.length} undocumented`);
    // A mismatch thrown where a caller swallowed it (a poll that retries) still fails the file. (Not by
    // throwing here: this hook runs first, and a throw would skip the file's own hooks, its service's close.)
    if (counts.mismatches.length) {
      console.error(counts.mismatches.join("\n"));
      process.exitCode = 1;
    }
  });
  process.once("exit", () => {
    const tally = process.env.OPENAPI_CHECK_TALLY;
    if (tally) appendFileSync(tally, `${JSON.stringify({ file: process.argv[1], checked: counts.checked, byApi: counts.byApi, unknownRoute: counts.unknownRoute, mismatches: counts.mismatches.length })}\n`);
  });
}
