import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { resolveWebhookTarget, WebhookTargetBlockedError } from "./url-guard.ts";

export interface WebhookRequest {
  url: string;
  /** Sent byte for byte. */
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  allowPrivate: boolean;
}

export interface WebhookResponse {
  /** Any 2xx within the timeout; redirects are not followed, so a 3xx is a failure. */
  ok: boolean;
  status: number | null;
  /** Failure detail for the delivery record; null on success. */
  errorMessage: string | null;
}

const USER_AGENT = "offramp-webhooks/1.0";

/**
 * One delivery attempt: resolve the host once, refuse non-public addresses (unless allowed), send over a
 * kept-alive connection to exactly that address (Host header and TLS server name stay the URL's host),
 * POST the body, and judge the status line. The whole exchange, DNS included, is bounded by `timeoutMs`.
 */
export async function postWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new TimeoutError(request.timeoutMs)), request.timeoutMs);
  try {
    const target = await resolveWebhookTarget(request.url, request.allowPrivate, controller.signal);
    const status = await send(target.url, target.address, target.family, request, controller.signal);
    if (status >= 200 && status < 300) return { ok: true, status, errorMessage: null };
    const note = status >= 300 && status < 400 ? " (redirects are not followed)" : "";
    return { ok: false, status, errorMessage: `HTTP ${status}${note}` };
  } catch (error) {
    return { ok: false, status: null, errorMessage: describeFailure(error, controller.signal) };
  } finally {
    clearTimeout(timer);
  }
}

class TimeoutError extends Error {
  constructor(ms: number) {
    super(`Timed out after ${ms} ms`);
    this.name = "TimeoutError";
  }
}

function describeFailure(error: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof TimeoutError) return signal.reason.message;
  if (error instanceof WebhookTargetBlockedError) return error.message;
  const err = error as NodeJS.ErrnoException;
  const code = err.code ? ` (${err.code})` : "";
  return `Request failed: ${err.message || "unknown error"}${code}`.slice(0, 500);
}

// Keep-alive connections, one agent per (scheme, host, port, checked address): a reused socket was opened
// to an address that passed the guard, and a new one is opened to the address the attempt just checked.
const agents = new Map<string, http.Agent>();

function agentFor(url: URL, address: string): http.Agent {
  const key = `${url.protocol}//${url.host} ${address}`;
  let agent = agents.get(key);
  if (!agent) {
    // Idle sockets close after 30 s (and are unref'd meanwhile, so they never hold the process open).
    const options = { keepAlive: true, timeout: 30_000, scheduling: "lifo" as const };
    agent = url.protocol === "https:" ? new https.Agent(options) : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

/** Closes every kept-alive webhook connection (on shutdown). */
export function closeWebhookConnections(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

/** Answers larger than this are not read to the end: the socket is dropped instead of reused. */
const MAX_DRAINED_BYTES = 64 * 1024;

function send(url: URL, address: string, family: 4 | 6, request: WebhookRequest, signal: AbortSignal): Promise<number> {
  // A new connection goes to the address already checked, whatever the resolver would answer now.
  const pinnedLookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) (callback as unknown as (err: null, addresses: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const client = url.protocol === "https:" ? https : http;
  return new Promise<number>((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: "POST",
        agent: agentFor(url, address),
        lookup: pinnedLookup,
        signal,
        headers: {
          ...request.headers,
          "Content-Type": "application/json",
          "Content-Length": String(Buffer.byteLength(request.body, "utf8")),
          "User-Agent": USER_AGENT,
        },
      },
      (res) => {
        // Only the status line decides; the body is read and discarded so the connection can be reused.
        let drained = 0;
        res.on("data", (chunk: Buffer) => {
          drained += chunk.length;
          if (drained > MAX_DRAINED_BYTES) res.destroy();
        });
        res.on("error", () => undefined);
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end(request.body, "utf8");
  });
}
