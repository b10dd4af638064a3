import { createReadStream } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { AppContext, AppState } from "../http/context.ts";
import { createRouter } from "../http/router.ts";

// The market page at /market: a static page and its script, public (they hold no data); everything it
// shows comes from /market/v1 with the session its wallet signs in for. No build step, no CDN.

const publicDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");

/** Every file the page serves, by URL name: a fixed list (a Map, so `constructor` finds nothing). */
const FILES = new Map<string, { file: string; type: string }>([
  ["market.js", { file: path.join(publicDir, "market.js"), type: "application/javascript" }],
  ["market.css", { file: path.join(publicDir, "market.css"), type: "text/css" }],
]);

// Scripts and styles only from this origin; the page talks to this origin's API only (the wallet
// extension reaches its chain itself).
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

export function marketPageRouter(): Router<AppState> {
  const router = createRouter();
  const page = (ctx: AppContext) => {
    ctx.type = "html";
    ctx.set("Cache-Control", "no-cache");
    ctx.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.body = createReadStream(path.join(publicDir, "index.html"));
  };
  router.get("/market", page);
  router.get("/market/assets/:file", (ctx) => {
    const asset = FILES.get(ctx.params.file ?? "");
    if (!asset) return;
    ctx.type = asset.type;
    ctx.set("Cache-Control", "no-cache");
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.body = createReadStream(asset.file);
  });
  return router;
}
