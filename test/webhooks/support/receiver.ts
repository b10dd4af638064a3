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
  /** Which TCP connection it came on (1, 2, ... in the order the receiver accepted them). */
  connection: number;
}

/** What to do with the nth request (0-based): a status to answer, or "hang" to never answer. */
export type Behaviour = (request: ReceivedRequest, index: number) => number | "hang" | Promise<number | "hang"> | { status: number; headers: Record<string, string> };

export interface TestReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far. */
  connections(): number;
  /** The most requests it held unanswered at one time. */
  maxInFlight(): number;
  close(): Promise<void>;
}

/** A real HTTP endpoint on 127.0.0.1 that records every request it gets. */
export async function startReceiver(behaviour: Behaviour = () => 200): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const connectionIds = new WeakMap<object, number>();
  let connections = 0;
  let inFlight = 0;
  let maxInFlight = 0;
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
        connection: connectionIds.get(req.socket) ?? 0,
      };
      const index = requests.push(received) - 1;
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      void Promise.resolve(behaviour(received, index)).then((answer) => {
        if (answer === "hang") return;
        const { status, headers } = typeof answer === "number" ? { status: answer, headers: {} } : answer;
        received.respondedAt = Date.now();
        inFlight--;
        res.writeHead(status, headers).end();
      });
    });
  });
  server.on("connection", (socket) => connectionIds.set(socket, ++connections));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/offramp`,
    requests,
    connections: () => connections,
    maxInFlight: () => maxInFlight,
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
