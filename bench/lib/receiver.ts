// The partner's webhook endpoint: a local HTTP server that answers 200 at once and records, per order
// and event, the monotonic time the first delivery arrived and how many arrived, and keeps the last
// webhook's headers and body (figure 8 replays them to measure the receiver's own capacity).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { nowMs } from "./stats.ts";

export interface WebhookReceiver {
  url: string;
  received: number;
  /** The last webhook received (its signature headers and body), if any. */
  lastWebhook: { headers: Record<string, string>; body: string } | undefined;
  /** Monotonic ms (performance.now) of the first delivery of `event` for `orderId`, if any. */
  arrival(orderId: string, event: string): number | undefined;
  /** How many deliveries of `event` for `orderId` arrived (more than 1: a duplicate). */
  count(orderId: string, event: string): number;
  /** Resolves with the arrival time, or rejects after `timeoutMs`. */
  waitFor(orderId: string, event: string, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const arrivals = new Map<string, number>();
  const counts = new Map<string, number>();
  const waiters = new Map<string, ((at: number) => void)[]>();
  let received = 0;
  let lastWebhook: WebhookReceiver["lastWebhook"];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= 65_536) chunks.push(chunk);
    });
    request.on("end", () => {
      const at = nowMs();
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
      received += 1;
      try {
        const text = Buffer.concat(chunks).toString("utf8");
        const body = JSON.parse(text) as { event?: string; data?: { orderId?: string } };
        const key = `${body.data?.orderId}|${body.event}`;
        if (!arrivals.has(key)) arrivals.set(key, at);
        counts.set(key, (counts.get(key) ?? 0) + 1);
        const headers = Object.fromEntries(Object.entries(request.headers).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
        lastWebhook = { headers, body: text };
        for (const resolve of waiters.get(key) ?? []) resolve(at);
        waiters.delete(key);
      } catch {
        // not a webhook body: ignored
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    get received() {
      return received;
    },
    get lastWebhook() {
      return lastWebhook;
    },
    arrival: (orderId, event) => arrivals.get(`${orderId}|${event}`),
    count: (orderId, event) => counts.get(`${orderId}|${event}`) ?? 0,
    waitFor(orderId, event, timeoutMs) {
      const key = `${orderId}|${event}`;
      const known = arrivals.get(key);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${event} webhook for ${orderId} within ${timeoutMs} ms`)), timeoutMs);
        const list = waiters.get(key) ?? [];
        list.push((at) => {
          clearTimeout(timer);
          resolve(at);
        });
        waiters.set(key, list);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
