// The reference of figure 1: a bare Koa handler on the same machine, answering the same JSON shape as
// GET /api/v1/health without authentication, rate limiting, routing, logging or database. Run as a
// child process like the service; prints "READY <url>".
import http from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";

const app = new Koa();
app.use((ctx) => {
  ctx.body = { status: "ok", partner: "Reference", tier: "ENTERPRISE", timestamp: new Date().toISOString() };
});
const server = http.createServer(app.callback());
server.keepAliveTimeout = 5_000;
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`READY http://127.0.0.1:${port}\n`);
});
process.once("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
