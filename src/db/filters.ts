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

/** The page envelope of every list (spec: `{ <items>, total, limit, offset, hasMore }`). */
export type Page<Key extends string, Item> = { [K in Key]: Item[] } & { total: number; limit: number; offset: number; hasMore: boolean };

/** One page of `items` under `key`, out of `total`, at the requested limit and offset. */
export function pageOf<Key extends string, Item>(key: Key, items: Item[], total: number, page: { limit: number; offset: number }): Page<Key, Item> {
  return { [key]: items, total, limit: page.limit, offset: page.offset, hasMore: page.offset + items.length < total } as Page<Key, Item>;
}
