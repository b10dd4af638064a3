// The bench's HTTP client (bench/lib/http.ts) reuses kept-alive connections. A server may close one that
// sat idle for its keep-alive timeout just as the client sends on it: the request fails before any answer,
// the server never having read it. Such a request is sent again on a new connection; any other failure is
// the caller's to see.
import assert from "node:assert/strict";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { httpRequest } from "../../bench/lib/http.ts";

const ANSWER = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok";

/** A raw HTTP server: on each connection, `onRequest(n)` answers the n-th request (from 1) or, returning false, resets the connection unanswered. */
async function rawServer(onRequest: (connection: number, request: number) => boolean) {
  let connections = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    const connection = connections;
    let requests = 0;
    socket.on("data", () => {
      requests += 1;
      if (onRequest(connection, requests)) socket.write(ANSWER);
      else socket.resetAndDestroy();
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // The client keeps its connections alive: they are closed here, or the server would wait for them.
  after(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    for (const socket of open) socket.destroy();
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, connections: () => connections };
}

test("a request on a kept-alive connection the server closed unanswered is sent again on a new one", async () => {
  // The first connection answers its first request and resets on the second; later connections answer.
  const server = await rawServer((connection, request) => connection > 1 || request === 1);
  assert.deepEqual(await httpRequest(server.url, { method: "GET", timeoutMs: 5_000 }), { status: 200, text: "ok" });
  assert.deepEqual(await httpRequest(server.url, { method: "POST", body: "{}", timeoutMs: 5_000 }), { status: 200, text: "ok" });
  assert.equal(server.connections(), 2);
});

test("a request the server resets on a new connection fails, not sent again", async () => {
  const server = await rawServer(() => false);
  await assert.rejects(httpRequest(server.url, { method: "POST", body: "{}", timeoutMs: 5_000 }), { code: "ECONNRESET" });
  assert.equal(server.connections(), 1);
});
