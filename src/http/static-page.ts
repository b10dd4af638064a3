import { createReadStream } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { AppState } from "./context.ts";
import { createRouter } from "./router.ts";

// A browser page with no build step (the operator console, the market, the partner dashboard): its
// index.html at `path`, its scripts and styles under `path`/assets/. Public: the files hold no data;
// everything a page shows comes from its API with the credentials its user enters.

export interface StaticPage {
  /** The page's URL path, e.g. /admin. */
  path: string;
  /** The folder holding index.html and the page's own assets. */
  publicDir: string;
  /** The files of publicDir served under assets/, by name. Nothing else can be named. */
  assets: string[];
  /** Files from elsewhere (a package's build), served under assets/ by their base name. */
  packageAssets?: { file: string; cache: string }[];
  /** Script modules written at start (e.g. the service's own constants), served under assets/ by name. */
  generatedAssets?: { name: string; source: string }[];
  /** Inline styles allowed (mermaid writes them into the SVGs it draws); scripts never. */
  inlineStyles?: boolean;
}

const TYPES = new Map([
  [".js", "application/javascript"],
  [".css", "text/css"],
]);

function contentSecurityPolicy(inlineStyles: boolean): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    inlineStyles ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join("; ");
}

/** What every page may use: assets/page.js (one element builder, one API error) and assets/page.css (the palette). */
const sharedDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");
const sharedAssets = ["page.js", "page.css"].map((name) => ({ file: path.join(sharedDir, name), cache: "no-cache" }));

type Asset = { type: string; cache: string } & ({ file: string } | { source: string });

export function staticPageRouter(page: StaticPage): Router<AppState> {
  // A Map, not an object literal: `constructor` or `__proto__` find nothing rather than Object.prototype's.
  const files = [...sharedAssets, ...page.assets.map((name) => ({ file: path.join(page.publicDir, name), cache: "no-cache" })), ...(page.packageAssets ?? [])];
  const assets = new Map<string, Asset>([
    ...files.map(({ file, cache }) => {
      const type = TYPES.get(path.extname(file));
      if (!type) throw new Error(`no content type for ${file}`);
      return [path.basename(file), { file, type, cache }] as const;
    }),
    ...(page.generatedAssets ?? []).map(({ name, source }) => [name, { source, type: "application/javascript", cache: "no-cache" }] as const),
  ]);
  const csp = contentSecurityPolicy(page.inlineStyles ?? false);
  const router = createRouter();
  router.get(page.path, (ctx) => {
    ctx.type = "html";
    ctx.set("Cache-Control", "no-cache");
    ctx.set("Content-Security-Policy", csp);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.body = createReadStream(path.join(page.publicDir, "index.html"));
  });
  router.get(`${page.path}/assets/:file`, (ctx) => {
    const asset = assets.get(ctx.params.file ?? "");
    if (!asset) return;
    ctx.type = asset.type;
    ctx.set("Cache-Control", asset.cache);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.body = "file" in asset ? createReadStream(asset.file) : asset.source;
  });
  return router;
}
