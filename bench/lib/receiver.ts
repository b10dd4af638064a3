// The partner's webhook endpoint: a local HTTP server that answers 200 at once and records, per order
// and event, the monotonic time the delivery arrived.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { nowMs } from "./stats.ts";

export interface WebhookReceiver {
  url: string;
  received: number;
  /** Monotonic ms (performance.now) of the first delivery of `event` for `orderId`, if any. */
  arrival(orderId: string, event: string): number | undefined;
  /** Resolves with the arrival time, or rejects after `timeoutMs`. */
  waitFor(orderId: string, event: string, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const arrivals = new Map<string, number>();
  const waiters = new Map<string, ((at: number) => void)[]>();
  let received = 0;
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
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { event?: string; data?: { orderId?: string } };
        const key = `${body.data?.orderId}|${body.event}`;
        if (!arrivals.has(key)) arrivals.set(key, at);
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
    arrival: (orderId, event) => arrivals.get(`${orderId}|${event}`),
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
