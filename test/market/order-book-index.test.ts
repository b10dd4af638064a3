// The order book's query is served by the partial index `orders_book` (migration 1763800000700) once the
// orders table is large: 20,000 orders in the shape POST /orders writes (the bench's bulk insert, most
// finished, a few ACTIVE), ANALYZE, then EXPLAIN of the very statement orderBook runs. Its total is not
// a count of the listings (migration 1764400000310): the tests check it against one after every kind of
// change that moves an order into or out of the book, read right after the change commits.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Queryable } from "../../src/db/pool.ts";
import { orderBook, sharedOrderBookReads } from "../../src/market/order-book.ts";
import { DEPOSIT_HELD } from "../../src/orders/queries.ts";
import type { TestService } from "../support/service.ts";
import { startServiceWithBulkOrders } from "../support/bulk-orders.ts";

let service: TestService;
before(async () => {
  service = await startServiceWithBulkOrders({
    partnerName: "Book Partner",
    tag: "book",
    mix: [
      { status: "COMPLETED", percent: 85 },
      { status: "ACTIVE", percent: 5 },
      { status: "EXPIRED", percent: 5 },
      { status: "REFUNDED", percent: 5 },
    ],
  });
});
after(async () => {
  await service?.close();
});

/** The statements orderBook sends, run as it runs them. */
function recording(): { db: Queryable; statements: { text: string; values: unknown[] }[] } {
  const statements: { text: string; values: unknown[] }[] = [];
  const db = {
    // A statement comes as text and values, or as a named (prepared) statement's config.
    query: (statement: string | { text: string; values?: unknown[] }, values: unknown[] = []) => {
      const sent = typeof statement === "string" ? { text: statement, values } : { text: statement.text, values: statement.values ?? [] };
      statements.push(sent);
      return typeof statement === "string" ? service.pool.query(statement, values) : service.pool.query(statement);
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

/** "node type on relation" of every node of an EXPLAIN (FORMAT JSON) plan that reads a relation. */
function scansIn(plan: Record<string, unknown>): string[] {
  const own = typeof plan["Relation Name"] === "string" ? [`${String(plan["Node Type"])} on ${plan["Relation Name"]}`] : [];
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...own, ...children.flatMap(scansIn)];
}

async function planOf(filters: Parameters<typeof orderBook>[2], which: "page" | "total", indexerSchema?: string): Promise<Record<string, unknown>> {
  const { db, statements } = recording();
  await orderBook(db, indexerSchema, filters);
  const statement = statements.find((sent) => sent.text.includes("ORDER BY") === (which === "page"));
  assert.ok(statement, `the ${which} query was sent`);
  const { rows } = await service.pool.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
  return rows[0]!["QUERY PLAN"][0].Plan;
}

const planOfPage = async (filters: Parameters<typeof orderBook>[2]) => indexesIn(await planOf(filters, "page"));

/** The book's total as a plain count of the listed orders (what the total stands for). */
async function countedTotal(filters: { bankCode?: string } = {}): Promise<number> {
  const { rows } = await service.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM orders WHERE status = 'ACTIVE' AND expires_at > now() AND NOT ${DEPOSIT_HELD} AND ($1::text IS NULL OR bank_code = $1)`,
    [filters.bankCode ?? null],
  );
  return Number(rows[0]!.n);
}

/** Some ACTIVE orders, not the template's. */
async function activeIds(count: number): Promise<string[]> {
  const { rows } = await service.pool.query<{ id: string }>("SELECT id FROM orders WHERE status = 'ACTIVE' ORDER BY id LIMIT $1", [count]);
  assert.equal(rows.length, count);
  return rows.map((row) => row.id);
}

test("the first page of the book, cheapest first, is read through orders_book", async () => {
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM orders");
  assert.ok(Number(rows[0]!.n) > 20_000);
  assert.ok((await planOfPage({ limit: 50, offset: 0 })).includes("orders_book"));
});

test("with the amount and bank filters, still orders_book", async () => {
  assert.ok((await planOfPage({ limit: 50, offset: 0, minAmount: 10, maxAmount: 1000, bankCode: "012" })).includes("orders_book"));
});

/**
 * An indexer schema whose escrow_event holds what the service reads of it (the columns and the reputation
 * index of indexer/ponder.schema.ts), and a ReputationChanged event of `score` for each of `accounts`,
 * after an earlier one of -1 (the last one counts).
 */
async function indexerWithReputations(schema: string, accounts: string[], score: number): Promise<void> {
  await service.pool.query(`CREATE SCHEMA ${schema};
    CREATE TABLE ${schema}.escrow_event (id text PRIMARY KEY, block_number bigint NOT NULL, block_timestamp bigint NOT NULL, log_index integer NOT NULL,
                                          event_name text NOT NULL, order_id text, args jsonb NOT NULL);
    CREATE INDEX escrow_event_reputation_index ON ${schema}.escrow_event ((args ->> 'account'), block_number, log_index) WHERE event_name = 'ReputationChanged'`);
  await service.pool.query(
    `INSERT INTO ${schema}.escrow_event (id, block_number, block_timestamp, log_index, event_name, args)
     SELECT '31337-' || b.n || '-' || a.i, b.n, 1764000000 + b.n, a.i, 'ReputationChanged', jsonb_build_object('account', lower(a.account), 'delta', b.score, 'newScore', b.score)
       FROM unnest($1::text[]) WITH ORDINALITY AS a (account, i), (VALUES (1, '-1'), (2, $2::text)) AS b (n, score)`,
    [accounts, String(score)],
  );
}

test("the sellers' reputations come in the page's statement, still through orders_book; 0 before the indexer has made its tables", async () => {
  const schema = "book_reputation";
  const { rows: sellers } = await service.pool.query<{ seller_wallet: string }>("SELECT DISTINCT seller_wallet FROM orders WHERE status = 'ACTIVE' AND seller_wallet IS NOT NULL");
  assert.ok(sellers.length > 0);
  await indexerWithReputations(schema, sellers.map((row) => row.seller_wallet), -3);
  const { db, statements } = recording();
  const page = await orderBook(db, schema, { limit: 20, offset: 0 });
  assert.equal(statements.length, 2, "the page and its total, nothing else");
  assert.ok(page.orders.length > 0 && page.orders.every((order) => order.sellerReputation === -3), JSON.stringify(page.orders.map((order) => order.sellerReputation)));
  assert.ok(indexesIn(await planOf({ limit: 50, offset: 0 }, "page", schema)).includes("orders_book"));
  await service.pool.query(`DROP SCHEMA ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  assert.ok((await orderBook(service.pool, schema, { limit: 20, offset: 0 })).orders.every((order) => order.sellerReputation === 0));
  await service.pool.query(`DROP SCHEMA ${schema}`);
});

test("the whole book's total reads no listing: the counters less the few unlisted ACTIVE orders, each through its own index", async () => {
  const plan = await planOf({ limit: 20, offset: 0 }, "total");
  const indexes = indexesIn(plan);
  assert.ok(indexes.includes("orders_active_expiry") && indexes.includes("orders_active_held"), JSON.stringify(indexes));
  assert.ok(!indexes.includes("orders_book") && !indexes.includes("orders_status"), JSON.stringify(indexes));
  assert.ok(!scansIn(plan).includes("Seq Scan on orders"), JSON.stringify(scansIn(plan)));
});

test("a filtered total counts orders_book alone, no heap filter on the deposit hold", async () => {
  const plan = await planOf({ limit: 20, offset: 0, bankCode: "012" }, "total");
  assert.deepEqual(indexesIn(plan), ["orders_book"]);
  assert.ok(!JSON.stringify(plan).includes("machine_snapshot"), "the hold is the index's predicate, not a filter");
});

test("the total is the count of listed orders right after each change that moves an order into or out of the book commits", async () => {
  const total = async (filters: { bankCode?: string } = {}) => (await orderBook(service.pool, undefined, { limit: 20, offset: 0, ...filters })).total;
  const check = async (what: string) => {
    assert.equal(await total(), await countedTotal(), what);
    const { rows } = await service.pool.query<{ bank_code: string }>("SELECT bank_code FROM orders WHERE status = 'ACTIVE' LIMIT 1");
    assert.equal(await total({ bankCode: rows[0]!.bank_code }), await countedTotal({ bankCode: rows[0]!.bank_code }), `${what} (filtered by bank)`);
  };
  await check("as inserted");
  const before = await countedTotal();
  assert.ok(before > 500, `${before} listed`);
  const [held, released, ended, locked, relisted] = [await activeIds(5), [] as string[], [] as string[], [] as string[], [] as string[]];
  const hold = (decision: string | null) =>
    `jsonb_set(machine_snapshot, '{context,depositHold}', jsonb_build_object('sellerWallet', '0x15d34aaf54267db7d7c367839aaf71a00a2c6a65', 'decision', ${decision === null ? "null" : `'${decision}'`}::text))`;

  await service.pool.query(`UPDATE orders SET machine_snapshot = ${hold(null)} WHERE id = ANY($1)`, [held]);
  await check("deposits held for review");
  assert.equal(await countedTotal(), before - 5);

  released.push(held[0]!);
  await service.pool.query(`UPDATE orders SET machine_snapshot = ${hold("RELEASE")} WHERE id = ANY($1)`, [released]);
  await check("a held deposit released by an operator");

  ended.push(...(await service.pool.query<{ id: string }>("SELECT id FROM orders WHERE status = 'ACTIVE' AND NOT id = ANY($1) ORDER BY id DESC LIMIT 7", [held])).rows.map((row) => row.id));
  await service.pool.query("UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = ANY($1)", [ended]);
  await check("listings past their end, their timers not run yet");
  // A held deposit whose listing has ended too is unlisted once, not twice.
  await service.pool.query("UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = $1", [held[1]]);
  await check("a held deposit past its listing's end");

  locked.push(...(await activeIds(20)).filter((id) => !held.includes(id)).slice(0, 6));
  await service.pool.query("UPDATE orders SET status = 'LOCKED' WHERE id = ANY($1)", [locked]);
  await check("orders locked by buyers");
  await service.pool.query("UPDATE orders SET status = 'EXPIRED' WHERE id = ANY($1)", [ended.slice(0, 3)]);
  await check("ended listings whose timers ran");

  relisted.push(...locked.slice(0, 2));
  await service.pool.query("UPDATE orders SET status = 'ACTIVE' WHERE id = ANY($1)", [relisted]);
  await check("locks that expired: the orders listed again");
  assert.ok((await countedTotal()) < before, "the changes did move orders out of the book");
});

// Found by the bench (figure 3 after figures 7, 5 and 9): with statistics that still saw few listings,
// PostgreSQL joined every listing to the sellers' reputations by a hash and sorted them all, 70-440 ms a
// page. The reputations are now looked up for the page's rows alone, so the walk of orders_book stops at
// the page however the planner weighs the lookups: here it is kept from nested loops, what a lookup a row is.
test("whatever join the planner picks for the reputations, the page walks orders_book and stops at the page", async () => {
  const schema = "book_join_method";
  const { rows: sellers } = await service.pool.query<{ seller_wallet: string }>("SELECT DISTINCT seller_wallet FROM orders WHERE status = 'ACTIVE' AND seller_wallet IS NOT NULL LIMIT 50");
  await indexerWithReputations(schema, sellers.map((row) => row.seller_wallet), -3);
  const session = await service.pool.connect();
  try {
    const { db, statements } = recording();
    await orderBook(db, schema, { limit: 20, offset: 0 });
    const page = statements.find((sent) => sent.text.includes("ORDER BY"))!;
    await session.query("SET enable_nestloop = off");
    const { rows } = await session.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${page.text}`, page.values);
    const nodes = (plan: Record<string, unknown>): Record<string, unknown>[] => [plan, ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(nodes)];
    const book = nodes(rows[0]!["QUERY PLAN"][0].Plan).filter((node) => node["Index Name"] === "orders_book");
    assert.equal(book.length, 1, "read through orders_book");
    assert.ok(Number(book[0]!["Actual Rows"]) <= 20, `orders_book read ${String(book[0]!["Actual Rows"])} listings for a page of 20`);
  } finally {
    await session.query("RESET enable_nestloop");
    session.release();
    await service.pool.query(`DROP SCHEMA ${schema} CASCADE`);
  }
});

test("a session plans the book's page and its total once, not at every request", async () => {
  // A statement PostgreSQL plans again at every call (its generic plan priced above the custom ones) spent
  // more on planning than on running: the total with the time as a parameter did.
  const { db, statements } = recording();
  await orderBook(db, undefined, { limit: 20, offset: 0 });
  const session = await service.pool.connect();
  try {
    for (let call = 0; call < 12; call++) await orderBook(session, undefined, { limit: 20, offset: 0 });
    const { rows } = await session.query<{ statement: string; generic_plans: string; custom_plans: string }>(
      "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = ANY($1)",
      [statements.map((sent) => sent.text)],
    );
    assert.equal(rows.length, 2, "the page and its total, each prepared");
    for (const row of rows) {
      assert.ok(Number(row.custom_plans) <= 5 && Number(row.generic_plans) >= 7, `planned ${row.custom_plans} times for 12 calls: ${row.statement.slice(0, 80)}`);
    }
  } finally {
    session.release();
  }
});

test("a listing's expiry is its row's, as ISO text to the millisecond", async () => {
  const page = await orderBook(service.pool, undefined, { limit: 20, offset: 0 });
  assert.ok(page.orders.length > 0);
  const { rows } = await service.pool.query<{ escrow_order_id: string; expires_at: Date }>("SELECT escrow_order_id, expires_at FROM orders WHERE escrow_order_id = ANY($1)", [
    page.orders.map((order) => order.escrowOrderId),
  ]);
  const expiry = new Map(rows.map((row) => [row.escrow_order_id, row.expires_at.toISOString()]));
  for (const order of page.orders) assert.equal(order.listingExpiresAt, expiry.get(order.escrowOrderId));
});

test("requests for a page while it is being read share that read: its two statements are sent once", async () => {
  const { db, statements } = recording();
  const read = sharedOrderBookReads(db, undefined);
  const [first, second] = await Promise.all([read({ limit: 20, offset: 0 }), read({ limit: 20, offset: 0 })]);
  assert.equal(statements.length, 2);
  assert.equal(first, second);
  assert.deepEqual(first, await orderBook(service.pool, undefined, { limit: 20, offset: 0 }));
});

test("a request after the read settled reads the book again", async () => {
  const { db, statements } = recording();
  const read = sharedOrderBookReads(db, undefined);
  const first = await read({ limit: 20, offset: 0 });
  const { rows } = await service.pool.query<{ id: string }>("SELECT id FROM orders WHERE escrow_order_id = $1", [first.orders[0]!.escrowOrderId]);
  const id = rows[0]!.id;
  await service.pool.query("UPDATE orders SET status = 'LOCKED' WHERE id = $1", [id]);
  try {
    const second = await read({ limit: 20, offset: 0 });
    assert.equal(statements.length, 4);
    assert.equal(second.total, first.total - 1, "the change committed between the reads is in the second");
    assert.ok(!second.orders.some((order) => order.escrowOrderId === first.orders[0]!.escrowOrderId));
  } finally {
    await service.pool.query("UPDATE orders SET status = 'ACTIVE' WHERE id = $1", [id]);
  }
});

test("other pages and other filters are read on their own", async () => {
  const { db, statements } = recording();
  const read = sharedOrderBookReads(db, undefined);
  const pages = await Promise.all([read({ limit: 20, offset: 0 }), read({ limit: 20, offset: 20 }), read({ limit: 10, offset: 0 }), read({ limit: 20, offset: 0, bankCode: "012" })]);
  assert.equal(statements.length, 8);
  assert.equal(new Set(pages).size, 4);
});

test("a read that fails fails every request that shared it and is not kept for the next", async () => {
  let failing = true;
  const db = {
    query: (statement: string | { text: string; values?: unknown[] }, values: unknown[] = []) =>
      failing ? Promise.reject(new Error("connection lost")) : typeof statement === "string" ? service.pool.query(statement, values) : service.pool.query(statement),
  } as unknown as Queryable;
  const read = sharedOrderBookReads(db, undefined);
  const outcomes = await Promise.allSettled([read({ limit: 20, offset: 0 }), read({ limit: 20, offset: 0 })]);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ["rejected", "rejected"]);
  failing = false;
  assert.ok((await read({ limit: 20, offset: 0 })).orders.length > 0);
});
