import http from "node:http";
import type { Duplex } from "node:stream";

// The Node server's own limits: what a caller can hold or send before any middleware runs.

/** Request line and headers together; a 16 KB path still reaches the routes and gets the spec's answer. */
export const MAX_HEADER_BYTES = 32 * 1024;
/** The whole head must arrive within this time: a client that trickles its headers (slowloris) is cut off. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** The whole request, body included (at most 64 KiB), must arrive within this time. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** An idle keep-alive connection is closed after this time. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often Node checks the two timeouts above: they hold to within this. */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * A request Node's parser refuses before Koa sees it (headers too large, a malformed request line)
 * answers 400 VALIDATION_ERROR in the spec's error shape, not Node's bare 431/400; timeouts keep
 * Node's 408. The connection is closed either way.
 */
function answerClientError(error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex): void {
  if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    socket.end("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  const message = error.code === "HPE_HEADER_OVERFLOW" ? `The request's line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB` : "The request is not valid HTTP";
  const body = JSON.stringify({ error: "VALIDATION_ERROR", message });
  socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** The API's HTTP server, with bounded header size and time to send a request. */
export function createHttpServer(): http.Server {
  const server = http.createServer({
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
  });
  server.on("clientError", answerClientError);
  return server;
}
