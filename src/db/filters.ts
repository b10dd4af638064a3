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
