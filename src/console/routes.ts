import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { AppState } from "../http/context.ts";
import { staticPageRouter } from "../http/static-page.ts";
import { ordersBrowserModule } from "../orders/browser-module.ts";

// The operator console at /admin: everything it shows comes from /admin/v1 with the admin token the
// operator types in, kept in sessionStorage. The state chart is drawn in the browser by mermaid, served
// from the npm package (no CDN).

const publicDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");
const mermaidDir = path.dirname(fileURLToPath(import.meta.resolve("mermaid")));

export function consoleRouter(): Router<AppState> {
  const mermaid = { file: path.join(mermaidDir, "mermaid.min.js"), cache: "public, max-age=86400" };
  // mermaid writes inline styles into the SVG it draws.
  return staticPageRouter({ path: "/admin", publicDir, assets: ["console.js", "chart.js", "console.css"], packageAssets: [mermaid], generatedAssets: [ordersBrowserModule], inlineStyles: true });
}
