import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import Koa from "koa";
import type { AppState } from "../../src/http/context.ts";
import { RouteGroup } from "../../src/http/routes.ts";

// A group's routes without parameters are found in a map before the router (routes.ts): these pin that a
// request meets the same route, params and route template either way.

let server: ReturnType<Koa["listen"]>;
let base: string;
const guarded: string[] = [];

before(async () => {
  const group = new RouteGroup({
    prefix: "/api/v1",
    security: "none",
    guards: [
      async (ctx, next) => {
        guarded.push(`${ctx.method} ${ctx.path}`);
        await next();
      },
    ],
  });
  const answer = (name: string) => async (ctx: Koa.ParameterizedContext<AppState>) => {
    ctx.body = { route: name, params: ctx.params, template: (ctx as { _matchedRoute?: string })._matchedRoute };
  };
  const spec = (method: "get" | "post", path: string) => ({ method, path, summary: path, tag: "Test", responses: { 200: { description: "ok" } } });
  // `/orders/:id` comes first: the router gives it `/orders/stats` too, and so must the map.
  group.add(spec("get", "/orders/:id"), answer("order"));
  group.add(spec("get", "/orders/stats"), answer("stats"));
  group.add(spec("get", "/health"), answer("health"));
  group.add(spec("post", "/health"), answer("health by POST"));
  const app = new Koa<AppState>();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.status = (error as { status?: number }).status ?? 500;
      ctx.body = { error: (error as { code?: string }).code };
    }
  });
  app.use(group.middleware());
  server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
after(() => new Promise((resolve) => server.close(resolve)));

test("a route without parameters answers with empty params and its full template, after the group's guards", async () => {
  guarded.length = 0;
  const response = await fetch(`${base}/health`);
  assert.deepEqual(await response.json(), { route: "health", params: {}, template: "/api/v1/health" });
  assert.deepEqual(guarded, ["GET /api/v1/health"]);
});

test("each method of a path reaches its own route, and HEAD reaches the GET route", async () => {
  assert.equal(((await (await fetch(`${base}/health`, { method: "POST" })).json()) as { route: string }).route, "health by POST");
  const head = await fetch(`${base}/health`, { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.match(head.headers.get("content-type") ?? "", /json/);
});

test("a path a route with parameters registered earlier also matches goes to that route, as the router decides", async () => {
  assert.deepEqual(await (await fetch(`${base}/orders/stats`)).json(), { route: "order", params: { id: "stats" }, template: "/api/v1/orders/:id" });
});

test("another spelling of a route's path is not that route: the group's fallback answers 404 after its guards", async () => {
  for (const path of ["/HEALTH", "/health/", "/%68ealth", "//health"]) {
    guarded.length = 0;
    const response = await fetch(`${base}${path}`);
    assert.equal(response.status, 404, path);
    assert.deepEqual(guarded, [`GET /api/v1${path}`], path);
  }
});
