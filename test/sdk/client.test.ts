// The SDK's transport against a scripted HTTP server: Idempotency-Key on every POST and the same on the
// call's own retries, which retries are made (429 after Retry-After; 5xx and network errors only where
// safe), the bound on them, typed errors, and pagination.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";
import {
  createOfframpClient,
  OfframpApiError,
  QuoteExpiredError,
  RateLimitedError,
  RateUnavailableError,
  ValidationError,
  type OfframpClient,
} from "../../sdk/src/index.ts";

interface Seen {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  apiKey: string | undefined;
  body: string;
}
type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | "drop";

let server: http.Server;
let baseUrl: string;
const seen: Seen[] = [];
/** What the server answers next, one per request; then 200 `{}`. */
let script: Answer[] = [];
let client: OfframpClient;

before(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, idempotencyKey: req.headers["idempotency-key"] as string | undefined, apiKey: req.headers["x-api-key"] as string | undefined, body });
      const answer = script.shift() ?? { status: 200, body: {} };
      if (answer === "drop") return void req.socket.destroy();
      res.writeHead(answer.status, { "Content-Type": "application/json", "X-Request-Id": `req-${seen.length}`, ...answer.headers }).end(JSON.stringify(answer.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen.length = 0;
  script = [];
  client = createOfframpClient({ baseUrl, apiKey: "pk_test", retry: { baseDelayMs: 1, maxDelayMs: 2_000 } });
});

const quoteBody = { type: "SELL", amountUsdc: 100, partnerUserRef: "u1" } as const;

test("every POST carries an Idempotency-Key, a new one per call, and the API key on every request", async () => {
  await client.createQuote(quoteBody);
  await client.createQuote(quoteBody);
  await client.sandbox.faucet({ address: "0x0000000000000000000000000000000000000001" });
  await client.getOrder("ord_1");
  assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ["POST /api/v1/quotes", "POST /api/v1/quotes", "POST /api/v1/sandbox/faucet", "GET /api/v1/orders/ord_1"]);
  const keys = seen.slice(0, 3).map((s) => s.idempotencyKey);
  assert.ok(keys.every((key) => key && /^[\x20-\x7e]{1,255}$/.test(key)), String(keys));
  assert.equal(new Set(keys).size, 3);
  assert.equal(seen[3]!.idempotencyKey, undefined);
  assert.ok(seen.every((s) => s.apiKey === "pk_test"));
  assert.deepEqual(JSON.parse(seen[0]!.body), quoteBody);
});

test("a POST's retries after a 503 and a dropped connection carry the call's key and body", async () => {
  script = [{ status: 503, body: { error: "INTERNAL_ERROR", message: "x" } }, "drop", { status: 201, body: { id: "qt_1" } }];
  const quote = await client.createQuote(quoteBody, {});
  assert.equal(quote.id, "qt_1");
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen.map((s) => s.idempotencyKey)).size, 1);
  assert.ok(seen.every((s) => s.body === seen[0]!.body));
});

test("a base URL given with the API's path /api/v1 reaches the same routes", async () => {
  await createOfframpClient({ baseUrl: `${baseUrl}/api/v1/`, apiKey: "pk_test" }).health();
  assert.equal(seen[0]!.url, "/api/v1/health");
});

test("the caller's own Idempotency-Key is sent as given", async () => {
  await client.createOrder({ quoteId: "qt_1", partnerUserRef: "u1", sellerClabe: "012180001183597190" }, { idempotencyKey: "order-for-invoice-42" });
  assert.equal(seen[0]!.idempotencyKey, "order-for-invoice-42");
});

test("a 429 is retried after its Retry-After, even on a POST the API does not make idempotent", async () => {
  script = [{ status: 429, body: { error: "RATE_LIMITED", message: "slow down" }, headers: { "Retry-After": "1" } }];
  const started = Date.now();
  await client.sandbox.faucet({ address: "0x0000000000000000000000000000000000000001" });
  assert.equal(seen.length, 2);
  assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);
});

test("a 429 asking for longer than the client waits is thrown as RateLimitedError with its Retry-After", async () => {
  script = [{ status: 429, body: { error: "RATE_LIMITED", message: "slow down" }, headers: { "Retry-After": "60" } }];
  const error = await client.getOrder("ord_1").catch((e: unknown) => e);
  assert.ok(error instanceof RateLimitedError);
  assert.equal(error.retryAfterSeconds, 60);
  assert.equal(seen.length, 1);
});

test("a 5xx or a dropped connection is not retried on a POST whose route ignores Idempotency-Key", async () => {
  script = [{ status: 502, body: { error: "INTERNAL_ERROR", message: "x" } }];
  await assert.rejects(client.sandbox.deposit("ord_1"), (error: unknown) => error instanceof OfframpApiError && error.status === 502);
  script = ["drop"];
  await assert.rejects(client.sandbox.deposit("ord_1"), (error: unknown) => !(error instanceof OfframpApiError));
  assert.equal(seen.length, 2);
});

test("GETs are retried after 5xx at most maxRetries times, then the last error is thrown with its code", async () => {
  script = Array.from({ length: 10 }, () => ({ status: 502, body: { error: "RATE_UNAVAILABLE", message: "no rate" } }));
  const error = await client.exchangeRate().catch((e: unknown) => e);
  assert.ok(error instanceof RateUnavailableError);
  assert.equal(seen.length, 4, "the first attempt and 3 retries");
});

test("a 4xx is thrown at once as its code's class with status, code, message, details and request id", async () => {
  script = [{ status: 410, body: { error: "QUOTE_EXPIRED", message: "The quote has expired", quoteId: "qt_1" } }];
  const error = await client.createOrder({ quoteId: "qt_1", partnerUserRef: "u1", sellerClabe: "012180001183597190" }).catch((e: unknown) => e);
  assert.ok(error instanceof QuoteExpiredError && error instanceof OfframpApiError);
  assert.deepEqual([error.status, error.code, error.message, error.details, error.requestId], [410, "QUOTE_EXPIRED", "The quote has expired", { quoteId: "qt_1" }, "req-1"]);
  assert.equal(seen.length, 1);
  script = [{ status: 400, body: { error: "VALIDATION_ERROR", message: "bad" } }];
  await assert.rejects(client.getOrder("x"), ValidationError);
});

test("an unknown code is an OfframpApiError with that code", async () => {
  script = [{ status: 418, body: { error: "SOMETHING_NEW", message: "new" } }];
  await assert.rejects(client.getOrder("x"), (error: unknown) => error instanceof OfframpApiError && error.code === "SOMETHING_NEW" && error.status === 418);
});

test("the orders iterator walks every page with limit and offset until hasMore is false", async () => {
  script = [
    { status: 200, body: { orders: [{ id: "a" }, { id: "b" }], total: 3, limit: 2, offset: 0, hasMore: true } },
    { status: 200, body: { orders: [{ id: "c" }], total: 3, limit: 2, offset: 2, hasMore: false } },
  ];
  const ids: string[] = [];
  for await (const order of client.orders({ status: "COMPLETED", limit: 2 })) ids.push(order.id as string);
  assert.deepEqual(ids, ["a", "b", "c"]);
  assert.deepEqual(seen.map((s) => s.url), ["/api/v1/orders?limit=2&status=COMPLETED&offset=0", "/api/v1/orders?limit=2&status=COMPLETED&offset=2"]);
});

test("the webhooks iterator walks the delivery pages", async () => {
  script = [
    { status: 200, body: { deliveries: [{ id: "whd_1" }], hasMore: true } },
    { status: 200, body: { deliveries: [{ id: "whd_2" }], hasMore: false } },
  ];
  const ids: string[] = [];
  for await (const delivery of client.webhooks({ orderId: "ord_1" })) ids.push(delivery.id);
  assert.deepEqual(ids, ["whd_1", "whd_2"]);
  assert.match(seen[0]!.url, /^\/api\/v1\/webhooks\?limit=100&orderId=ord_1&offset=0$/);
});
