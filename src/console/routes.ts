import { createReadStream } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { AppContext, AppState } from "../http/context.ts";
import { createRouter } from "../http/router.ts";

// The operator console at /admin: a static page and its scripts, public (they hold no data); everything
// it shows comes from /admin/v1 with the admin token the operator types in, kept in sessionStorage.
// The state chart is drawn in the browser by mermaid, served from the npm package (no CDN).

const publicDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");
const mermaidDir = path.dirname(fileURLToPath(import.meta.resolve("mermaid")));

/**
 * Every file the console serves, by URL name: a fixed list, so no request can name another file. A Map,
 * not an object literal, so `constructor` or `__proto__` find nothing rather than Object.prototype's.
 */
const FILES = new Map<string, { file: string; type: string; cache: string }>([
  ["console.js", { file: path.join(publicDir, "console.js"), type: "application/javascript", cache: "no-cache" }],
  ["chart.js", { file: path.join(publicDir, "chart.js"), type: "application/javascript", cache: "no-cache" }],
  ["console.css", { file: path.join(publicDir, "console.css"), type: "text/css", cache: "no-cache" }],
  ["mermaid.min.js", { file: path.join(mermaidDir, "mermaid.min.js"), type: "application/javascript", cache: "public, max-age=86400" }],
]);

// Scripts only from this origin; mermaid writes inline styles into the SVG it draws.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

export function consoleRouter(): Router<AppState> {
  const router = createRouter();
  const page = (ctx: AppContext) => {
    ctx.type = "html";
    ctx.set("Cache-Control", "no-cache");
    ctx.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.body = createReadStream(path.join(publicDir, "index.html"));
  };
  router.get("/admin", page);
  router.get("/admin/assets/:file", (ctx) => {
    const asset = FILES.get(ctx.params.file ?? "");
    if (!asset) return;
    ctx.type = asset.type;
    ctx.set("Cache-Control", asset.cache);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.body = createReadStream(asset.file);
  });
  return router;
}
