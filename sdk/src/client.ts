// The partner API client: typed from the served OpenAPI document (generated/partner-api.ts) through
// openapi-fetch, over retryingFetch (Idempotency-Key, retries), with every failed answer thrown as the
// error class of its code (errors.ts).
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { operations, paths } from "./generated/partner-api.ts";
import { errorFromResponse } from "./errors.ts";
import { DEFAULT_RETRY, retryingFetch, type RetryOptions } from "./transport.ts";

/** The partner API's path under the service's URL (the document's server). */
export const API_PATH = "/api/v1";

export interface OfframpClientOptions {
  /** The service's URL, e.g. `https://offramp.example.com` (sandbox: `http://127.0.0.1:3000`); `/api/v1` is added unless it ends the URL already. */
  baseUrl: string;
  /** The partner's API key (X-API-Key). */
  apiKey: string;
  /** Retry policy (see RetryOptions), or false for none. */
  retry?: Partial<RetryOptions> | false;
  /** The fetch to send requests with (default the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Per call: an Idempotency-Key of your own (e.g. derived from your record's id, so that a retry after your process restarts is still recognised), and an AbortSignal. */
export interface CallOptions {
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** A body the document does not describe yet (no response schema): typed loosely rather than not at all. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Undocumented = { [field: string]: any };
type Success<Op> = Op extends { responses: infer Responses }
  ? { [Status in keyof Responses & (200 | 201 | 202)]: Responses[Status] extends { content: { "application/json": infer Body } } ? Body : Undocumented }[keyof Responses & (200 | 201 | 202)]
  : never;
type Body<Op> = Op extends { requestBody?: { content: { "application/json": infer Json } } } ? Json : never;
type Query<Op> = Op extends { parameters: { query?: infer Parameters } } ? NonNullable<Parameters> : never;

export type User = Success<operations["postUsers"]>;
export type Quote = Success<operations["postQuotes"]>;
export type Order = Success<operations["getOrdersId"]>;
export type OrderPage = Success<operations["getOrders"]>;
export type DeliveryPage = Success<operations["getWebhooks"]>;

/** Throws every non-2xx answer as its code's error class. */
const throwErrors: Middleware = {
  async onResponse({ response }) {
    if (response.ok) return undefined;
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not the API's JSON (a proxy's page): kept as text in the message
    }
    throw errorFromResponse(response, body);
  },
};

function headersOf(options: CallOptions): { headers?: Record<string, string>; signal?: AbortSignal } {
  return { ...(options.idempotencyKey ? { headers: { "Idempotency-Key": options.idempotencyKey } } : {}), ...(options.signal ? { signal: options.signal } : {}) };
}

export function createOfframpClient(options: OfframpClientOptions) {
  const retry = options.retry === false ? { ...DEFAULT_RETRY, maxRetries: 0 } : { ...DEFAULT_RETRY, ...options.retry };
  /** openapi-fetch over every route of the document, with the same retries and errors: `api.GET("/orders/{id}", { params: { path: { id } } })`. */
  const api: Client<paths> = createClient<paths>({
    // The service's URL, with or without the API's path: both mean the same API.
    baseUrl: `${options.baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "")}${API_PATH}`,
    headers: { "X-API-Key": options.apiKey },
    fetch: retryingFetch(retry, options.fetch),
  });
  api.use(throwErrors);
  const data = async <T>(call: Promise<{ data?: unknown }>): Promise<T> => (await call).data as T;

  const listOrders = (query: Query<operations["getOrders"]> = {}, call: CallOptions = {}) => data<OrderPage>(api.GET("/orders", { params: { query }, ...headersOf(call) }));
  const listWebhooks = (query: Query<operations["getWebhooks"]> = {}, call: CallOptions = {}) => data<DeliveryPage>(api.GET("/webhooks", { params: { query }, ...headersOf(call) }));

  return {
    api,
    health: (call: CallOptions = {}) => data<Success<operations["getHealth"]>>(api.GET("/health", headersOf(call))),
    exchangeRate: (call: CallOptions = {}) => data<Success<operations["getExchange-rate"]>>(api.GET("/exchange-rate", headersOf(call))),

    createUser: (body: Body<operations["postUsers"]>, call: CallOptions = {}) => data<User>(api.POST("/users", { body, ...headersOf(call) })),
    getUser: (ref: string, call: CallOptions = {}) => data<Success<operations["getUsersRef"]>>(api.GET("/users/{ref}", { params: { path: { ref } }, ...headersOf(call) })),
    startKyc: (ref: string, body: Body<operations["postUsersRefKyc"]>, call: CallOptions = {}) =>
      data<Success<operations["postUsersRefKyc"]>>(api.POST("/users/{ref}/kyc", { params: { path: { ref } }, body, ...headersOf(call) })),
    attestKyc: (ref: string, body: Body<operations["postUsersRefKyc-attestation"]>, call: CallOptions = {}) =>
      data<Success<operations["postUsersRefKyc-attestation"]>>(api.POST("/users/{ref}/kyc-attestation", { params: { path: { ref } }, body, ...headersOf(call) })),

    createQuote: (body: Body<operations["postQuotes"]>, call: CallOptions = {}) => data<Quote>(api.POST("/quotes", { body, ...headersOf(call) })),

    createOrder: (body: Body<operations["postOrders"]>, call: CallOptions = {}) => data<Success<operations["postOrders"]>>(api.POST("/orders", { body, ...headersOf(call) })),
    getOrder: (id: string, call: CallOptions = {}) => data<Order>(api.GET("/orders/{id}", { params: { path: { id } }, ...headersOf(call) })),
    cancelOrder: (id: string, call: CallOptions = {}) => data<Success<operations["postOrdersIdCancel"]>>(api.POST("/orders/{id}/cancel", { params: { path: { id } }, ...headersOf(call) })),
    listOrders,
    /** Every order matching `query`, page after page (newest first; `limit` is the page size, 100 by default). */
    async *orders(query: Omit<Query<operations["getOrders"]>, "offset"> = {}, call: CallOptions = {}) {
      for (let offset = 0; ; ) {
        const page = await listOrders({ limit: 100, ...query, offset }, call);
        yield* page.orders as Order[];
        if (!page.hasMore || page.orders.length === 0) return;
        offset += page.orders.length;
      }
    },

    /**
     * Polls GET /orders/:id until the order is at `status` (or at one of several), every `intervalMs`
     * (default 500), for at most `timeoutMs` (default 60,000). Webhooks tell the same without polling.
     */
    async waitForOrder(id: string, status: string | readonly string[], options: { timeoutMs?: number; intervalMs?: number } & CallOptions = {}): Promise<Order> {
      const wanted = typeof status === "string" ? [status] : status;
      const deadline = Date.now() + (options.timeoutMs ?? 60_000);
      for (;;) {
        const order = await data<Order>(api.GET("/orders/{id}", { params: { path: { id } }, ...headersOf(options) }));
        if (wanted.includes(order.status)) return order;
        if (Date.now() > deadline) throw new Error(`order ${id} is ${order.status}, not ${wanted.join(" or ")}, after ${options.timeoutMs ?? 60_000} ms`);
        await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500));
      }
    },

    listWebhooks,
    /** Every webhook delivery matching `query`, page after page (newest first; `limit` is the page size, 100 by default). */
    async *webhooks(query: Omit<Query<operations["getWebhooks"]>, "offset"> = {}, call: CallOptions = {}) {
      for (let offset = 0; ; ) {
        const page = await listWebhooks({ limit: 100, ...query, offset }, call);
        const deliveries = page.deliveries ?? [];
        yield* deliveries;
        if (!page.hasMore || deliveries.length === 0) return;
        offset += deliveries.length;
      }
    },

    /** Test helpers, mounted only in sandbox (decisions section 13). */
    sandbox: {
      deposit: (orderId: string, body: Body<operations["postSandboxOrdersIdDeposit"]> = {}, call: CallOptions = {}) =>
        data<Success<operations["postSandboxOrdersIdDeposit"]>>(api.POST("/sandbox/orders/{id}/deposit", { params: { path: { id: orderId } }, body, ...headersOf(call) })),
      lock: (orderId: string, body: Body<operations["postSandboxOrdersIdLock"]> = {}, call: CallOptions = {}) =>
        data<Success<operations["postSandboxOrdersIdLock"]>>(api.POST("/sandbox/orders/{id}/lock", { params: { path: { id: orderId } }, body, ...headersOf(call) })),
      pay: (orderId: string, body: Body<operations["postSandboxOrdersIdPay"]> = {}, call: CallOptions = {}) =>
        data<Success<operations["postSandboxOrdersIdPay"]>>(api.POST("/sandbox/orders/{id}/pay", { params: { path: { id: orderId } }, body, ...headersOf(call) })),
      dispute: (orderId: string, body: Body<operations["postSandboxOrdersIdDispute"]>, call: CallOptions = {}) =>
        data<Success<operations["postSandboxOrdersIdDispute"]>>(api.POST("/sandbox/orders/{id}/dispute", { params: { path: { id: orderId } }, body, ...headersOf(call) })),
      kycDecision: (sessionId: string, body: Body<operations["postSandboxKycSessionIdDecision"]>, call: CallOptions = {}) =>
        data<Success<operations["postSandboxKycSessionIdDecision"]>>(api.POST("/sandbox/kyc/{sessionId}/decision", { params: { path: { sessionId } }, body, ...headersOf(call) })),
      chain: (call: CallOptions = {}) => data<Success<operations["getSandboxChain"]>>(api.GET("/sandbox/chain", headersOf(call))),
      faucet: (body: Body<operations["postSandboxFaucet"]>, call: CallOptions = {}) => data<Success<operations["postSandboxFaucet"]>>(api.POST("/sandbox/faucet", { body, ...headersOf(call) })),
    },
  };
}

export type OfframpClient = ReturnType<typeof createOfframpClient>;
