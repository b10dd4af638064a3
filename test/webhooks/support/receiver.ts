import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as received. */
  rawBody: string;
  receivedAt: number;
  /** When the receiver answered (undefined while held or never answered). */
  respondedAt?: number;
}

/** What to do with the nth request (0-based): a status to answer, or "hang" to never answer. */
export type Behaviour = (request: ReceivedRequest, index: number) => number | "hang" | Promise<number | "hang"> | { status: number; headers: Record<string, string> };

export interface TestReceiver {
  url: string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** A real HTTP endpoint on 127.0.0.1 that records every request it gets. */
export async function startReceiver(behaviour: Behaviour = () => 200): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const received: ReceivedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawBody: Buffer.concat(chunks).toString("utf8"),
        receivedAt: Date.now(),
      };
      const index = requests.push(received) - 1;
      void Promise.resolve(behaviour(received, index)).then((answer) => {
        if (answer === "hang") return;
        const { status, headers } = typeof answer === "number" ? { status: answer, headers: {} } : answer;
        received.respondedAt = Date.now();
        res.writeHead(status, headers).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/offramp`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
