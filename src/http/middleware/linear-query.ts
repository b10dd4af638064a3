import type Koa from "koa";
import type { AppState } from "../context.ts";

/**
 * The query string parsed in one pass, into the shape Koa gives `ctx.query` (a key's one value as a
 * string, several as an array, every key an own property). Koa 3 parses with `URLSearchParams` and then
 * calls `getAll` for every key, which is quadratic in the number of parameters: `?a&a&…` with 4,000 of
 * them (8 KB) blocked the event loop 0.7 s, with 16,000 (32 KB) 18.5 s.
 */
function parseQuery(text: string): Record<string, string | string[]> {
  const values = new Map<string, string[]>();
  for (const [key, value] of new URLSearchParams(text)) {
    const list = values.get(key);
    if (list) list.push(value);
    else values.set(key, [value]);
  }
  const query: Record<string, string | string[]> = {};
  for (const [key, list] of values) {
    Object.defineProperty(query, key, { value: list.length === 1 ? list[0] : list, writable: true, enumerable: true, configurable: true });
  }
  return query;
}

/**
 * Puts the linear parse where Koa's `ctx.query` looks first, its per-request cache (`_querycache`, keyed
 * by the query string), so nothing downstream ever runs Koa's own parse. Called before any middleware
 * reads the query. test/security/bounded-work.test.ts sends 16,000 parameters: it fails if a Koa upgrade
 * stops reading this cache.
 */
export function useLinearQuery(ctx: Koa.ParameterizedContext<AppState>): void {
  const text = ctx.querystring;
  if (text) {
    const cache = Object.create(null) as Record<string, unknown>;
    cache[text] = parseQuery(text);
    (ctx.request as unknown as { _querycache: Record<string, unknown> })._querycache = cache;
  }
}
