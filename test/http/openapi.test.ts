import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { RouteGroup, type RouteSpec } from "../../src/http/routes.ts";
import { startTestService, type TestService } from "../support/service.ts";

// The OpenAPI 3.1 document at /api/v1/openapi.json is generated from the same route specs whose schemas
// validate requests: every route registered on the partner group must appear in it with its schema.
const registered: { prefix: string; spec: RouteSpec }[] = [];
const originalAdd = RouteGroup.prototype.add;

interface Operation {
  operationId: string;
  parameters: { name: string; in: string; required: boolean; schema: unknown }[];
  requestBody?: { required: boolean; content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
  security?: Record<string, unknown[]>[];
}
interface Document {
  openapi: string;
  info: { title: string; version: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown> };
}

let service: TestService;
let document: Document;

before(async () => {
  RouteGroup.prototype.add = function (this: RouteGroup, spec: RouteSpec, handler: never) {
    registered.push({ prefix: this.prefix, spec });
    return originalAdd.call(this, spec, handler);
  } as typeof RouteGroup.prototype.add;
  service = await startTestService();
  const response = await fetch(`${service.baseUrl}/api/v1/openapi.json`);
  assert.equal(response.status, 200);
  document = (await response.json()) as Document;
});
after(async () => {
  RouteGroup.prototype.add = originalAdd;
  await service.close();
});

const partnerRoutes = () => registered.filter((route) => route.prefix === "/api/v1");
const documentPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}");

test("the document is public and declares OpenAPI 3.1 with the /api/v1 server", () => {
  assert.match(document.openapi, /^3\.1\.\d+$/);
  assert.equal(typeof document.info.title, "string");
  assert.equal(typeof document.info.version, "string");
  assert.deepEqual(document.servers, [{ url: "/api/v1" }]);
});

test("the foundation's partner routes are all registered", () => {
  const routes = partnerRoutes().map(({ spec }) => `${spec.method.toUpperCase()} ${spec.path}`);
  for (const route of ["GET /health", "GET /exchange-rate", "POST /users", "GET /users/:ref", "POST /users/:ref/kyc-attestation", "POST /quotes"]) {
    assert.ok(routes.includes(route), `${route} is not registered`);
  }
});

test("every registered partner route appears with its method, summary and request body schema", () => {
  for (const { spec } of partnerRoutes()) {
    const operation = document.paths[documentPath(spec.path)]?.[spec.method];
    assert.ok(operation, `${spec.method} ${spec.path} is missing from the document`);
    if (spec.body) assert.deepEqual(operation.requestBody?.content["application/json"]?.schema, spec.body, `${spec.path} body`);
    else assert.equal(operation.requestBody, undefined);
  }
});

test("every registered query parameter appears with its schema", () => {
  for (const { spec } of partnerRoutes().filter((route) => route.spec.query)) {
    const operation = document.paths[documentPath(spec.path)]![spec.method]!;
    for (const [name, schema] of Object.entries((spec.query!.properties ?? {}) as Record<string, unknown>)) {
      const parameter = operation.parameters.find((entry) => entry.in === "query" && entry.name === name);
      assert.deepEqual(parameter?.schema, schema, `${spec.path}?${name}`);
    }
  }
});

test("nothing appears that is not registered", () => {
  const expected = new Set(partnerRoutes().map(({ spec }) => `${spec.method} ${documentPath(spec.path)}`));
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const method of Object.keys(operations)) assert.ok(expected.has(`${method} ${path}`), `${method} ${path}`);
  }
});

test("every path parameter is declared, required, in the path", () => {
  for (const [path, operations] of Object.entries(document.paths)) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
    for (const operation of Object.values(operations)) {
      const declared = operation.parameters.filter((parameter) => parameter.in === "path");
      assert.deepEqual(declared.map((parameter) => parameter.name).sort(), [...names].sort(), path);
      for (const parameter of declared) assert.equal(parameter.required, true);
    }
  }
});

test("every operation has a unique operationId, string status codes with descriptions, and a declared security scheme", () => {
  const ids = new Set<string>();
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      assert.ok(!ids.has(operation.operationId), `duplicate operationId ${operation.operationId}`);
      ids.add(operation.operationId);
      for (const [status, response] of Object.entries(operation.responses)) {
        assert.match(status, /^[1-5]\d\d$/);
        assert.equal(typeof response.description, "string");
      }
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement)) assert.ok(document.components.securitySchemes[scheme], scheme);
      }
    }
  }
});

test("authentication errors are documented on every partner operation in the spec's error shape", () => {
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const unauthorized = operation.responses["401"]?.content?.["application/json"]?.schema as { required: string[]; properties: { error: { enum: string[] } } };
      assert.deepEqual(unauthorized.required, ["error", "message"]);
      assert.deepEqual(unauthorized.properties.error.enum.sort(), ["INVALID_API_KEY", "MISSING_API_KEY"]);
      assert.deepEqual(operation.security, [{ apiKey: [] }]);
    }
  }
});

test("/docs renders an HTML page that loads the document", async () => {
  const response = await fetch(`${service.baseUrl}/docs`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("Content-Type") ?? "", /^text\/html/);
  const html = await response.text();
  assert.ok(html.includes('"/api/v1/openapi.json"'), "the page does not reference the document");
  for (const asset of html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)) {
    const served = await fetch(`${service.baseUrl}${asset[1]}`);
    assert.equal(served.status, 200, asset[1]);
    assert.ok((await served.arrayBuffer()).byteLength > 1000, `${asset[1]} is empty`);
  }
});

test("the reference page's script and stylesheet are served with their content types", async () => {
  const script = await fetch(`${service.baseUrl}/docs/assets/swagger-ui-bundle.js`);
  assert.equal(script.status, 200);
  assert.match(script.headers.get("Content-Type") ?? "", /javascript/);
  const style = await fetch(`${service.baseUrl}/docs/assets/swagger-ui.css`);
  assert.equal(style.status, 200);
  assert.match(style.headers.get("Content-Type") ?? "", /^text\/css/);
});

test("an unknown docs asset answers 404 NOT_FOUND", async () => {
  const response = await fetch(`${service.baseUrl}/docs/assets/..%2Fpackage.json`);
  assert.equal(response.status, 404);
  assert.equal(((await response.json()) as { error: string }).error, "NOT_FOUND");
});
