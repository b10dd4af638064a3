import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { lockQuoteWithUser } from "../../src/quotes/quotes.ts";
import { assertStatus } from "../support/assertions.ts";
import { explainedRun } from "../support/query-plans.ts";
import type { TestService } from "../support/service.ts";
import { SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";
import { withinOrWaiting } from "../support/until.ts";

// POST /orders locks its quote and the quote's user, and reads the user's orders, in one named statement,
// which each database session plans once. Planned on a table still empty, as on a new database, the plan is kept while the table
// grows: it must find the quote by its key, not read every quote of the partner.
const LATER_QUOTES = 2_000;

let service: TestService;
let partner: { id: string; apiKey: string };

before(async () => {
  service = await startOfflineOrderService();
  partner = await service.createPartner({ tier: "ENTERPRISE" });
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "seller" } }), 201);
});
after(() => service.close());

test(`the order's lock of its quote reads that quote only, planned on an empty table and run with ${LATER_QUOTES} more quotes of the partner`, async () => {
  const quote = await service.api<{ id: string }>("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", amountUsdc: 10, partnerUserRef: "seller" } });
  assertStatus(quote, 201);
  const session = await service.pool.connect();
  try {
    // The plan this session keeps for the statement, made now, with one quote in the table.
    await session.query("SET plan_cache_mode = force_generic_plan");
    await session.query("BEGIN");
    assert.ok(await lockQuoteWithUser(session, partner.id, quote.body.id));
    await session.query("ROLLBACK");

    await service.pool.query(
      `INSERT INTO quotes (id, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at)
       SELECT 'qt_later_' || g, partner_id, user_id, amount_usdc, exchange_rate, rate_source, gross_mxn, fee_percent, fee_mxn, fee_recipient, net_mxn, expires_at
         FROM quotes, generate_series(1, $2) AS g WHERE id = $1`,
      [quote.body.id, LATER_QUOTES],
    );
    const { rows } = await session.query<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE statement LIKE '%FROM quotes q JOIN users u%'");
    assert.equal(rows.length, 1);
    await session.query("BEGIN");
    const { indexes, buffers } = await explainedRun(session, `EXECUTE ${rows[0]!.name}(${session.escapeLiteral(quote.body.id)}, ${session.escapeLiteral(partner.id)}, now())`);
    await session.query("ROLLBACK");
    // The user's row twice (locked, and as the snapshot sees it) and its orders by their user.
    assert.deepEqual(indexes.sort(), ["orders_user_status", "quotes_pkey", "users_pkey", "users_pkey"]);
    assert.ok(buffers <= 20, `read ${buffers} buffers`);
  } finally {
    await session.query("ROLLBACK").catch(() => undefined);
    session.release();
  }
});

/** A transaction holding the lock POST /orders takes on `quoteId` and its user, as an order being created does. */
async function orderBeingCreated(quoteId: string): Promise<{ release(): Promise<void> }> {
  const session = await service.pool.connect();
  await session.query("BEGIN");
  assert.ok(await lockQuoteWithUser(session, partner.id, quoteId));
  return {
    release: async () => {
      await session.query("ROLLBACK").catch(() => undefined);
      session.release();
    },
  };
}

const newQuote = (partnerUserRef = "seller") =>
  service.api<{ id: string }>("POST", "/quotes", { key: partner.apiKey, body: { type: "SELL", amountUsdc: 10, partnerUserRef } });

/** Two quotes of the same user, made one after the other. */
async function twoQuotes(): Promise<[{ body: { id: string } }, { body: { id: string } }]> {
  const first = await newQuote();
  const second = await newQuote();
  assertStatus(first, 201);
  assertStatus(second, 201);
  return [first, second];
}

test("a new quote of a user is answered while an order of that user is being created", async () => {
  const first = await newQuote();
  assertStatus(first, 201);
  const order = await orderBeingCreated(first.body.id);
  try {
    // The quote's foreign key check takes a key-share lock on the user's row, which the order holds.
    const answered = await withinOrWaiting(newQuote());
    assert.notEqual(answered, "waiting", "POST /quotes waited for the order's transaction");
    assertStatus(answered as Awaited<ReturnType<typeof newQuote>>, 201);
  } finally {
    await order.release();
  }
});

test("a second order of the same user still waits for the first one's lock", async () => {
  const [first, second] = await twoQuotes();
  const order = await orderBeingCreated(first.body.id);
  const other = await service.pool.connect();
  try {
    await other.query("BEGIN");
    await other.query("SET LOCAL lock_timeout = '300ms'");
    await assert.rejects(lockQuoteWithUser(other, partner.id, second.body.id), (error: { code?: string }) => error.code === "55P03");
  } finally {
    await other.query("ROLLBACK").catch(() => undefined);
    other.release();
    await order.release();
  }
});

test("the lock reads the user's order history in its own statement when no order of the user came in between", async () => {
  assertStatus(await service.api("POST", "/users", { key: partner.apiKey, body: { partnerUserRef: "history-reader" } }), 201);
  const ordered = await newQuote("history-reader");
  assertStatus(ordered, 201);
  assertStatus(await service.api("POST", "/orders", { key: partner.apiKey, body: { quoteId: ordered.body.id, partnerUserRef: "history-reader", sellerClabe: SELLER_CLABE } }), 201);
  const next = await newQuote("history-reader");
  assertStatus(next, 201);
  const session = await service.pool.connect();
  try {
    await session.query("BEGIN");
    const locked = await lockQuoteWithUser(session, partner.id, next.body.id);
    assert.equal(locked?.history?.ordersLast24h, 1);
    assert.equal(locked?.history?.monthlyVolumeMxn, (await service.pool.query<{ total: string }>("SELECT total_mxn AS total FROM orders WHERE quote_id = $1", [ordered.body.id])).rows[0]!.total);
  } finally {
    await session.query("ROLLBACK").catch(() => undefined);
    session.release();
  }
});

test("an order of the user committed while the lock waited leaves the history to be read again", async () => {
  const [first, second] = await twoQuotes();
  const creator = await service.pool.connect();
  const waiter = await service.pool.connect();
  try {
    await creator.query("BEGIN");
    const held = await lockQuoteWithUser(creator, partner.id, first.body.id);
    assert.ok(held?.history);
    await waiter.query("BEGIN");
    const waiting = lockQuoteWithUser(waiter, partner.id, second.body.id);
    assert.equal(await withinOrWaiting(waiting, 300), "waiting");
    // What every order's insert does to its user's row (src/orders/create-order.ts, the risk level).
    await creator.query("UPDATE users SET aml_risk_level = 'LOW', updated_at = now() WHERE id = $1", [held.user.id]);
    await creator.query("COMMIT");
    const locked = await waiting;
    assert.equal(locked?.quote.id, second.body.id);
    assert.equal(locked?.history, undefined);
  } finally {
    await creator.query("ROLLBACK").catch(() => undefined);
    await waiter.query("ROLLBACK").catch(() => undefined);
    creator.release();
    waiter.release();
  }
});

test("a lock that waited for a transaction which wrote no order keeps its own read of the history", async () => {
  const [first, second] = await twoQuotes();
  const order = await orderBeingCreated(first.body.id);
  const waiter = await service.pool.connect();
  try {
    await waiter.query("BEGIN");
    const waiting = lockQuoteWithUser(waiter, partner.id, second.body.id);
    assert.equal(await withinOrWaiting(waiting, 300), "waiting");
    await order.release();
    assert.ok((await waiting)?.history);
  } finally {
    await waiter.query("ROLLBACK").catch(() => undefined);
    waiter.release();
  }
});
