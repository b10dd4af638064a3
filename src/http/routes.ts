import type { Layer } from "@koa/router";
import type Router from "@koa/router";
import type Koa from "koa";
import compose from "koa-compose";
import { NotFoundError, ValidationError } from "../domain/errors.ts";
import type { AppContext, AppState } from "./context.ts";
import { jsonBody } from "./middleware/json-body.ts";
import { createRouter } from "./router.ts";
import { bodyValidator, queryValidator, type JsonSchema, type Validator } from "./schema.ts";

export type Method = "get" | "post" | "patch" | "put" | "delete";

/** One route: its contract (validated at run time, and published in the OpenAPI document) and its handler. */
export interface RouteSpec {
  method: Method;
  /** Koa style, relative to the group's prefix: `/users/:ref`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  body?: JsonSchema;
  query?: JsonSchema;
  /** Honours `Idempotency-Key` (decisions section 11). */
  idempotent?: boolean;
  responses: Record<number, { description: string; schema?: JsonSchema }>;
  /** Error codes the route itself may answer (authentication and rate-limit errors are implied). */
  errors?: string[];
  /** Guards of this route alone, run after the group's (a dashboard route's session, CSRF and role checks). */
  guards?: Koa.Middleware<AppState>[];
}

export interface RouteInput<Body, Query> {
  body: Body;
  query: Query;
  params: Record<string, string>;
}

export type RouteHandler<Body, Query> = (ctx: AppContext, input: RouteInput<Body, Query>) => Promise<void>;

export type Security = "apiKey" | "bearer" | "none";

const NO_QUERY: JsonSchema = { type: "object", additionalProperties: false, properties: {} };
const validateNoBody = bodyValidator<unknown>({ type: "object", additionalProperties: false, properties: {} });

/**
 * The first string in `value` (a parsed query or JSON body) holding U+0000, which PostgreSQL text cannot
 * store: its path, or undefined. Iterative, so a body nested thousands deep cannot overflow the stack.
 */
function nulAt(value: unknown): string | undefined {
  const pending: [unknown, string][] = [[value, ""]];
  while (pending.length) {
    const [item, path] = pending.pop()!;
    if (typeof item === "string") {
      if (item.includes("\u0000")) return path;
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item)) {
        const at = path ? `${path}.${key}` : key;
        if (key.includes("\u0000")) return at;
        pending.push([child, at]);
      }
    }
  }
  return undefined;
}

/** VALIDATION_ERROR naming the first field of the query or body (`where`) that holds NUL. */
function refuseNul(where: "query" | "body", value: unknown): void {
  if (value === undefined) return;
  const at = nulAt(value);
  const field = at && at.length > 80 ? `${at.slice(0, 80)}…` : at;
  if (at !== undefined) throw new ValidationError(`The ${where}${field ? ` field "${field}"` : ""} must not contain the NUL character (U+0000)`);
}

const parseJsonBody = jsonBody();
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * A group of routes under one prefix and one kind of authentication. The group's guards (authentication,
 * rate limits) are part of every route's own middleware chain, so no route of the group can be reached
 * without them, whatever the path looks like; then the body is read and validated by the route's ajv
 * schema, then the handler runs. The same specs generate the OpenAPI document.
 */
export class RouteGroup {
  readonly prefix: string;
  readonly security: Security;
  readonly router: Router<AppState>;
  readonly specs: RouteSpec[] = [];
  private readonly guards: Koa.Middleware<AppState>[];
  private readonly idempotency: Koa.Middleware<AppState> | undefined;
  private readonly fallback: Router<AppState>;
  /** Each route without parameters, by `METHOD path`, with its own middleware chain composed once. */
  private readonly fixedRoutes: { layer: Layer; path: string; chain: Koa.Middleware<AppState> }[] = [];

  constructor(options: { prefix: string; security: Security; guards: Koa.Middleware<AppState>[]; idempotency?: Koa.Middleware<AppState> }) {
    this.prefix = options.prefix;
    this.security = options.security;
    this.guards = options.guards;
    this.idempotency = options.idempotency;
    this.router = createRouter({ prefix: options.prefix });
    // Any other path or method under the prefix runs the same guards before its 404, so an unknown
    // route answers as authentication decides (401 without credentials) and is counted like the others.
    this.fallback = createRouter({ prefix: options.prefix });
    this.fallback.all("/{*path}", ...this.guards, (ctx) => {
      throw new NotFoundError(`No route for ${ctx.method} ${ctx.path}`);
    });
  }

  /**
   * The group's routes, then its guarded fallback: what the app mounts. A path without parameters
   * (`/health`, `/quotes`) is found in a map, with the chain the router would run for it, instead of being
   * matched against each route's pattern and composed on every request (about a seventh of the partner
   * API's CPU a request: docs/benchmarks.md, figure 1). Only where the router itself would pick that route
   * first for that method: what a request meets is the same either way.
   */
  middleware(): Koa.Middleware<AppState> {
    const routes = this.router.routes() as Koa.Middleware<AppState>;
    const fallback = this.fallback.routes() as Koa.Middleware<AppState>;
    // By method, then path: no key is built on the request's path.
    const fixed = new Map<string, Map<string, { path: string; chain: Koa.Middleware<AppState> }>>();
    for (const route of this.fixedRoutes) {
      for (const method of route.layer.methods) {
        const paths = fixed.get(method) ?? fixed.set(method, new Map()).get(method)!;
        if (this.router.match(route.path, method).pathAndMethod[0] === route.layer && !paths.has(route.path)) paths.set(route.path, route);
      }
    }
    return (ctx, next) => {
      const route = fixed.get(ctx.method)?.get(ctx.path);
      if (!route) return routes(ctx, () => fallback(ctx, next));
      // What the router's own first step sets for a matched route without parameters.
      ctx.captures = [];
      ctx.params = (ctx.request as { params?: Record<string, string> }).params = {};
      ctx.routerPath = ctx._matchedRoute = route.path;
      return route.chain(ctx, () => fallback(ctx, next));
    };
  }

  add<Body = unknown, Query = unknown>(spec: RouteSpec, handler: RouteHandler<Body, Query>): this {
    this.specs.push(spec);
    const validateBody: Validator<Body> | undefined = spec.body ? bodyValidator<Body>(spec.body) : undefined;
    // A route that declares no query parameters accepts none: unknown fields are rejected everywhere.
    const validateQuery: Validator<Query> = queryValidator<Query>(spec.query ?? NO_QUERY);
    const run = async (ctx: AppContext) => {
      // No id or reference holds a control character: such a path names nothing (and PostgreSQL refuses NUL).
      const params = ctx.params as Record<string, string>;
      for (const name in params) if (CONTROL_CHARACTER.test(params[name]!)) throw new NotFoundError();
      // Nor can a query value or body field hold NUL: PostgreSQL text cannot store it. (Without a query
      // string, Koa's parse of one would make objects for nothing.)
      const rawQuery = ctx.querystring ? ctx.query : {};
      refuseNul("query", rawQuery);
      refuseNul("body", ctx.request.body);
      const query = validateQuery({ ...rawQuery });
      // Nor does a route whose contract has no body accept fields in one; a GET's body is never read. A route
      // may attach its body schema after registration, for the document only, when it checks the body itself later.
      if (!validateBody && spec.body === undefined && ctx.request.body !== undefined) validateNoBody(ctx.request.body);
      const body = validateBody ? validateBody(ctx.request.body ?? {}) : ({} as Body);
      await handler(ctx, { body, query, params });
    };
    const middleware: Koa.Middleware<AppState>[] = [...this.guards, ...(spec.guards ?? []), parseJsonBody];
    if (spec.idempotent && this.idempotency) middleware.push(this.idempotency);
    this.router[spec.method](spec.path, ...middleware, run as Koa.Middleware<AppState>);
    if (!/[:{*(]/.test(spec.path)) {
      // The layer the router just made for this route (its methods, HEAD with GET).
      this.fixedRoutes.push({ layer: this.router.stack.at(-1)!, path: `${this.prefix}${spec.path}`, chain: compose([...middleware, run as Koa.Middleware<AppState>]) });
    }
    return this;
  }
}
