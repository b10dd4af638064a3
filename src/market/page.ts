import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { AppState } from "../http/context.ts";
import { staticPageRouter } from "../http/static-page.ts";

// The market page at /market: everything it shows comes from /market/v1 with the session its wallet
// signs in for (the wallet extension reaches its chain itself). No build step, no CDN.

const publicDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");

export function marketPageRouter(): Router<AppState> {
  return staticPageRouter({ path: "/market", publicDir, assets: ["market.js", "market.css"] });
}
