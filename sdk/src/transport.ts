// The fetch under every call: an Idempotency-Key on each POST (made once per call, so the call's own
// retries carry the same key), and bounded retries where a retry cannot do a thing twice.
import { randomUUID } from "node:crypto";
import { IDEMPOTENT_POST_ROUTES } from "./generated/idempotent-routes.ts";

export interface RetryOptions {
  /** Retries after the first attempt (default 3); 0 turns retries off. */
  maxRetries: number;
  /** The first backoff in ms, doubled at each retry, with full jitter (default 500). */
  baseDelayMs: number;
  /** The longest backoff, and the longest Retry-After this client waits for (default 30,000). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000 };

// The document's routes are under the server path /api/v1 (whatever the host, or a proxy's prefix before it).
const routePatterns = IDEMPOTENT_POST_ROUTES.map((route) => new RegExp(`/api/v1${route.replace(/\{[^}]+\}/g, "[^/]+")}$`));

/**
 * Whether sending this request again cannot do its effect twice: a GET or HEAD, or a POST carrying an
 * Idempotency-Key to a route that honours it (the API answers the repeat with the first response).
 */
export function retryIsSafe(request: Request): boolean {
  if (request.method === "GET" || request.method === "HEAD") return true;
  if (request.method !== "POST" || !request.headers.has("Idempotency-Key")) return false;
  const { pathname } = new URL(request.url);
  return routePatterns.some((pattern) => pattern.test(pathname));
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), or undefined. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("Retry-After");
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/**
 * A fetch that adds an Idempotency-Key to a POST without one, and retries: a 429 after its Retry-After
 * (any method: the API refused it before doing anything), a 5xx or a network error only when
 * `retryIsSafe`. Each retry waits the exponential backoff (or Retry-After) and at most `maxRetries`
 * retries are made; then the last response is returned, or the last network error thrown.
 */
export function retryingFetch(options: RetryOptions, baseFetch: (request: Request) => Promise<Response> = (request) => fetch(request)) {
  return async (input: Request): Promise<Response> => {
    const headers = new Headers(input.headers);
    if (input.method === "POST" && !headers.has("Idempotency-Key")) headers.set("Idempotency-Key", randomUUID());
    // The body is read once and sent again as is on every attempt.
    const body = input.body ? await input.arrayBuffer() : undefined;
    const attempt = () => new Request(input.url, { method: input.method, headers, signal: input.signal, ...(body !== undefined ? { body } : {}) });
    const safe = retryIsSafe(attempt());
    for (let retry = 0; ; retry += 1) {
      const backoff = Math.random() * Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
      let response: Response;
      try {
        response = await baseFetch(attempt());
      } catch (error) {
        if (!safe || retry >= options.maxRetries || input.signal.aborted) throw error;
        await sleep(backoff, input.signal);
        continue;
      }
      if (retry >= options.maxRetries) return response;
      if (response.status === 429) {
        const wait = retryAfterMs(response) ?? backoff;
        if (wait > options.maxDelayMs) return response;
        await response.body?.cancel();
        await sleep(wait, input.signal);
      } else if (response.status >= 500 && safe) {
        await response.body?.cancel();
        await sleep(backoff, input.signal);
      } else {
        return response;
      }
    }
  };
}
