import { prepared, type Queryable } from "./pool.ts";

/**
 * A `WHERE` clause of equality filters, skipping the ones not given, with its parameter values; the
 * next free placeholder number is `values.length + 1` (for LIMIT and OFFSET).
 */
export function whereEqual(filters: [column: string, value: unknown][]): { where: string; values: unknown[] } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  for (const [column, value] of filters) {
    if (value === undefined) continue;
    values.push(value);
    conditions.push(`${column} = $${values.length}`);
  }
  return { where: conditions.length ? `WHERE ${conditions.join(" AND ")}` : "", values };
}

/**
 * A timestamp column as the API writes it, computed by PostgreSQL: `toISOString`'s form, the microseconds
 * truncated to milliseconds as the driver's parse into a `Date` does. A list reads its page's timestamps
 * this way: parsed into `Date`s and written back as text they were about 8% of `GET /orders`'s CPU
 * (docs/benchmarks.md, figure 10).
 */
export const isoTimestampText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The largest page a list serves: the pagination schema's `limit` maximum (src/http/schema.ts). */
export const MAX_PAGE_LIMIT = 100;

/** The page envelope of every list (spec: `{ <items>, total, limit, offset, hasMore }`). */
export type Page<Key extends string, Item> = { [K in Key]: Item[] } & { total: number; limit: number; offset: number; hasMore: boolean };

/** One page of `items` under `key`, out of `total`, at the requested limit and offset. */
export function pageOf<Key extends string, Item>(key: Key, items: Item[], total: number, page: { limit: number; offset: number }): Page<Key, Item> {
  return { [key]: items, total, limit: page.limit, offset: page.offset, hasMore: page.offset + items.length < total } as Page<Key, Item>;
}

/** A statement's text and its parameters ($1, $2... in the text). */
export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * A page's statement with its total as a first column, `page_total`: one round trip and one pool session
 * for both. Read as two statements in parallel, a list took two sessions and the per-statement work twice
 * (bench figures 3 and 10). The total is an uncorrelated subquery, run once; the page's plan is unchanged.
 * The page's text starts with `SELECT `; the total's has one row with one column.
 */
export function withTotal(page: Statement, total: Statement): Statement {
  const totalText = total.text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + page.values.length}`);
  if (!page.text.startsWith("SELECT ")) throw new Error("A page's statement starts with SELECT");
  return { text: `SELECT (${totalText}) AS page_total, ${page.text.slice("SELECT ".length)}`, values: [...page.values, ...total.values] };
}

/** A page and its total, in one statement (`withTotal`); an empty page has no row to carry it, so its total is read alone. */
export async function readPageWithTotal<Row>(db: Queryable, page: Statement, total: Statement): Promise<{ rows: Row[]; total: number }> {
  const both = withTotal(page, total);
  const { rows } = await db.query<Row & { page_total: string }>(prepared(both.text, both.values));
  if (rows.length > 0) return { rows, total: Number(rows[0]!.page_total) };
  const { rows: counted } = await db.query<{ n: string }>(prepared(total.text, total.values));
  return { rows, total: Number(counted[0]!.n) };
}
