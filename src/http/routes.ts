import Router from "@koa/router";
import type Koa from "koa";
import type { AppContext, AppState } from "./context.ts";
import { bodyValidator, queryValidator, type JsonSchema, type Validator } from "./schema.ts";

export type Method = "get" | "post" | "patch";

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
}

export interface RouteInput<Body, Query> {
  body: Body;
  query: Query;
  params: Record<string, string>;
}

export type RouteHandler<Body, Query> = (ctx: AppContext, input: RouteInput<Body, Query>) => Promise<void>;

export type Security = "apiKey" | "bearer" | "none";

const NO_QUERY: JsonSchema = { type: "object", additionalProperties: false, properties: {} };

/**
 * A group of routes under one prefix and one kind of authentication. Every route's body and query are
 * validated by its ajv schema before the handler runs; the same specs generate the OpenAPI document.
 */
export class RouteGroup {
  readonly prefix: string;
  readonly security: Security;
  readonly router: Router<AppState>;
  readonly specs: RouteSpec[] = [];
  private readonly idempotency: Koa.Middleware<AppState> | undefined;

  constructor(options: { prefix: string; security: Security; idempotency?: Koa.Middleware<AppState> }) {
    this.prefix = options.prefix;
    this.security = options.security;
    this.idempotency = options.idempotency;
    this.router = new Router<AppState>({ prefix: options.prefix });
  }

  add<Body = unknown, Query = unknown>(spec: RouteSpec, handler: RouteHandler<Body, Query>): this {
    this.specs.push(spec);
    const validateBody: Validator<Body> | undefined = spec.body ? bodyValidator<Body>(spec.body) : undefined;
    // A route that declares no query parameters accepts none: unknown fields are rejected everywhere.
    const validateQuery: Validator<Query> = queryValidator<Query>(spec.query ?? NO_QUERY);
    const run = async (ctx: AppContext) => {
      const query = validateQuery({ ...ctx.query });
      const body = validateBody ? validateBody(ctx.request.body ?? {}) : ({} as Body);
      await handler(ctx, { body, query, params: ctx.params as Record<string, string> });
    };
    const middleware: Koa.Middleware<AppState>[] = [];
    if (spec.idempotent && this.idempotency) middleware.push(this.idempotency);
    this.router[spec.method](spec.path, ...middleware, run as Koa.Middleware<AppState>);
    return this;
  }
}
