// The order book's query is served by the partial index `orders_book` (migration 1763800000700) once the
// orders table is large: 20,000 orders in the shape POST /orders writes (the bench's bulk insert, most
// finished, a few ACTIVE), ANALYZE, then EXPLAIN of the very statement orderBook runs.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { insertBulkOrders } from "../../bench/lib/bulk.ts";
import type { Queryable } from "../../src/db/pool.ts";
import { orderBook } from "../../src/market/order-book.ts";
import type { TestService } from "../support/service.ts";
import { placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";

let service: TestService;
before(async () => {
  service = await startOfflineOrderService();
  const partner = await service.createPartner({ name: "Book Partner", tier: "ENTERPRISE" });
  const template = await placeOrder({ service, partner });
  const mix = [
    { status: "COMPLETED", percent: 85 },
    { status: "ACTIVE", percent: 5 },
    { status: "EXPIRED", percent: 5 },
    { status: "REFUNDED", percent: 5 },
  ] as const;
  await insertBulkOrders(service.pool, { partnerId: partner.id, templateOrderId: template.id, count: 20_000, users: 400, tag: "book", mix: [...mix], spreadHours: 48 });
  await service.pool.query("ANALYZE orders");
});
after(async () => {
  await service?.close();
});

/** The statements orderBook sends, run as it runs them. */
function recording(): { db: Queryable; statements: { text: string; values: unknown[] }[] } {
  const statements: { text: string; values: unknown[] }[] = [];
  const db = {
    query: (text: string, values: unknown[] = []) => {
      statements.push({ text, values });
      return service.pool.query(text, values);
    },
  } as unknown as Queryable;
  return { db, statements };
}

/** Index names anywhere in an EXPLAIN (FORMAT JSON) plan. */
function indexesIn(plan: Record<string, unknown>): string[] {
  const own = typeof plan["Index Name"] === "string" ? [plan["Index Name"]] : [];
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...own, ...children.flatMap(indexesIn)];
}

async function planOfPage(filters: Parameters<typeof orderBook>[2]): Promise<string[]> {
  const { db, statements } = recording();
  await orderBook(db, undefined, filters);
  const page = statements.find((statement) => statement.text.includes("ORDER BY"));
  assert.ok(page, "the page query was sent");
  const { rows } = await service.pool.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(`EXPLAIN (FORMAT JSON) ${page.text}`, page.values);
  return indexesIn(rows[0]!["QUERY PLAN"][0].Plan);
}

test("the first page of the book, cheapest first, is read through orders_book", async () => {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM orders");
  assert.ok(Number(rows[0]!.n) > 20_000);
  assert.ok((await planOfPage({ limit: 50, offset: 0 })).includes("orders_book"));
});

test("with the amount and bank filters, still orders_book", async () => {
  assert.ok((await planOfPage({ limit: 50, offset: 0, minAmount: 10, maxAmount: 1000, bankCode: "012" })).includes("orders_book"));
});
