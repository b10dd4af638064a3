import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type Router from "@koa/router";
import type { AppState } from "./context.ts";
import { createRouter } from "./router.ts";
import type { RouteGroup, RouteSpec } from "./routes.ts";
import { STATUS_BY_CODE } from "../domain/errors.ts";
import { errorBodySchema, type JsonSchema } from "./schema.ts";

function openApiPath(koaPath: string): string {
  return koaPath.replace(/:([A-Za-z_]+)/g, "{$1}");
}

function operation(group: RouteGroup, spec: RouteSpec) {
  const params = [...spec.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => ({
    name: match[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const query = spec.query
    ? Object.entries((spec.query.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
        name,
        in: "query",
        required: ((spec.query!.required ?? []) as string[]).includes(name),
        schema,
      }))
    : [];
  const headers = spec.idempotent
    ? [{ name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 255 }, description: "Repeat within 24 h returns the first response" }]
    : [];
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    responses[status] = { description: response.description, ...(response.schema ? { content: { "application/json": { schema: response.schema } } } : {}) };
  }
  const implied = group.security === "apiKey" ? ["MISSING_API_KEY", "INVALID_API_KEY", "PARTNER_INACTIVE", "PARTNER_SUSPENDED", "IP_NOT_ALLOWED", "RATE_LIMITED"] : group.security === "bearer" ? ["UNAUTHORIZED", "RATE_LIMITED"] : [];
  const byStatus = new Map<number, string[]>();
  // (A bearer group's guard may refuse an address after repeated failures: admin-auth.ts.) Any route may also answer these: its query is validated (unknown fields too), a path parameter may name
  // nothing, an Idempotency-Key may be malformed or reused (src/http/routes.ts, middleware/idempotency.ts);
  // an unexpected failure is 500 INTERNAL_ERROR and the database out of reach for a moment 503 (http/errors.ts).
  const framework = ["VALIDATION_ERROR", ...(params.length ? ["NOT_FOUND"] : []), ...(spec.idempotent ? ["IDEMPOTENCY_KEY_REUSED"] : []), "INTERNAL_ERROR", "SERVICE_UNAVAILABLE"];
  for (const code of new Set([...(spec.errors ?? []), ...framework, ...implied])) {
    const status = STATUS_BY_CODE[code] ?? 500;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    responses[String(status)] = {
      description: codes.join(", "),
      // RATE_LIMITED and SERVICE_UNAVAILABLE say when to try again.
      ...(status === 429 || status === 503 ? { headers: { "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer" } } } } : {}),
      content: { "application/json": { schema: { ...errorBodySchema, properties: { ...errorBodySchema.properties, error: { enum: codes } } } } },
    };
  }
  return {
    operationId: `${spec.method}${spec.path.replace(/[/:]+(\w)/g, (_, c: string) => c.toUpperCase())}`,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag],
    parameters: [...params, ...query, ...headers],
    ...(spec.body ? { requestBody: { required: true, content: { "application/json": { schema: spec.body } } } } : {}),
    responses,
    // An open operation says so (`security: []`) rather than leaving readers to guess.
    security: group.security === "none" ? [] : [{ [SCHEME_NAME[group.security]]: [] }],
  };
}

const SECURITY_SCHEMES = {
  apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
  adminToken: { type: "http", scheme: "bearer" },
} as const;
const SCHEME_NAME = { apiKey: "apiKey", bearer: "adminToken" } as const;

/** The OpenAPI 3.1 document (ajv-only keywords stay as `x-` extensions, which OpenAPI allows), generated from the same route specs whose schemas validate requests. */
export function buildOpenApiDocument(options: { title: string; version: string; serverUrl: string; groups: RouteGroup[] }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const group of options.groups) {
    const relativePrefix = group.prefix.startsWith(options.serverUrl) ? group.prefix.slice(options.serverUrl.length) : group.prefix;
    for (const spec of group.specs) {
      const key = openApiPath(relativePrefix + spec.path);
      paths[key] = { ...paths[key], [spec.method]: operation(group, spec) };
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version },
    servers: [{ url: options.serverUrl }],
    paths,
    // Only the schemes this document's operations use: an unused one would only mislead.
    components: {
      securitySchemes: Object.fromEntries(
        [...new Set(options.groups.map((group) => group.security))].flatMap((security) => (security === "none" ? [] : [[SCHEME_NAME[security], SECURITY_SCHEMES[SCHEME_NAME[security]]]])),
      ),
    },
  };
}

const require = createRequire(import.meta.url);
const swaggerUiDir = path.dirname(require.resolve("swagger-ui-dist/package.json"));
// A Map, not an object: a name such as `constructor` must find nothing, not Object.prototype's.
const SWAGGER_FILES = new Map<string, string>([
  ["swagger-ui.css", "text/css"],
  ["swagger-ui-bundle.js", "application/javascript"],
  ["swagger-ui-standalone-preset.js", "application/javascript"],
]);

/** `/docs`: the API reference rendered by Swagger UI (served from the npm package, no CDN) over the document. */
export function docsRoutes(documentUrl: string): Router<AppState> {
  const router = createRouter();
  router.get("/docs", (ctx) => {
    ctx.type = "html";
    ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Offramp API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: ${JSON.stringify(documentUrl)}, dom_id: "#reference", deepLinking: true });</script>
</body></html>`;
  });
  router.get("/docs/assets/:file", async (ctx) => {
    const file = ctx.params.file ?? "";
    const type = SWAGGER_FILES.get(file);
    if (!type) return;
    ctx.type = type;
    ctx.set("Cache-Control", "public, max-age=86400");
    ctx.body = await readFile(path.join(swaggerUiDir, file));
  });
  return router;
}
