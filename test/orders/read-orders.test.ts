import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { withTransaction, type Queryable } from "../../src/db/pool.ts";
import { orderDetail } from "../../src/orders/routes.ts";
import type { TestService } from "../support/service.ts";
import { SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

let service: TestService;
let key: string;
let otherKey: string;
const created: string[] = [];

async function placeOrder(apiKey: string, ref: string, amountUsdc: number): Promise<string> {
  await service.api("POST", "/users", { key: apiKey, body: { partnerUserRef: ref } });
  const quote = await service.api<{ id: string }>("POST", "/quotes", { key: apiKey, body: { type: "SELL", amountUsdc, partnerUserRef: ref } });
  const order = await service.api<{ id: string }>("POST", "/orders", { key: apiKey, body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE } });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  return order.body.id;
}

before(async () => {
  service = await startOfflineOrderService({ DEPOSIT_TIMEOUT_SECONDS: "2" });
  key = (await service.createPartner({ tier: "ENTERPRISE" })).apiKey;
  otherKey = (await service.createPartner({ tier: "ENTERPRISE" })).apiKey;
  for (const [ref, amount] of [["alice", 10], ["bob", 20], ["alice", 30]] as const) created.push(await placeOrder(key, ref, amount));
  await placeOrder(otherKey, "carol", 40);
});
after(() => service.close());

describe("GET /orders", () => {
  test("lists only the partner's orders, newest first, with the list-item fields", async () => {
    const response = await service.api<{ orders: Json[]; total: number; limit: number; offset: number; hasMore: boolean }>("GET", "/orders", { key });
    assert.equal(response.status, 200);
    assert.equal(response.body.total, 3);
    assert.deepEqual(response.body.orders.map((order) => order.id), [...created].reverse());
    assert.deepEqual(Object.keys(response.body.orders[0]!).sort(), [
      "amlRiskLevel", "amount", "completedAt", "createdAt", "escrowOrderId", "expiresAt", "fxRateUsdMxn", "id", "partnerUserRef", "pricePerUnit", "status", "token", "totalMxn",
    ]);
    const newest = response.body.orders[0]!;
    assert.equal(newest.amount, 30);
    assert.equal(newest.totalMxn, 517.5);
    assert.equal(newest.pricePerUnit, 17.25);
    assert.equal(newest.fxRateUsdMxn, 17.25);
    assert.equal(newest.completedAt, null);
  });

  test("a list item's timestamps are its detail's, to the millisecond, whatever their microseconds", async () => {
    const id = created[0]!;
    const { rows: [kept] } = await service.pool.query("SELECT created_at, expires_at, completed_at FROM orders WHERE id = $1", [id]);
    await service.pool.query(
      "UPDATE orders SET created_at = '2026-03-04 05:06:07.123999+00', expires_at = '2026-12-31 23:59:59.999999+00', completed_at = '2026-06-01 12:00:00.000500+00' WHERE id = $1",
      [id],
    );
    try {
      const list = await service.api<{ orders: Json[] }>("GET", "/orders?limit=100", { key });
      const item = list.body.orders.find((order) => order.id === id)!;
      const detail = await service.api<Json>("GET", `/orders/${id}`, { key });
      assert.deepEqual([item.createdAt, item.expiresAt, item.completedAt], ["2026-03-04T05:06:07.123Z", "2026-12-31T23:59:59.999Z", "2026-06-01T12:00:00.000Z"]);
      assert.deepEqual([item.createdAt, item.expiresAt, item.completedAt], [detail.body.createdAt, detail.body.expiresAt, detail.body.completedAt]);
    } finally {
      await service.pool.query("UPDATE orders SET created_at = $2, expires_at = $3, completed_at = $4 WHERE id = $1", [id, kept.created_at, kept.expires_at, kept.completed_at]);
    }
  });

  test("filters by partnerUserRef and status", async () => {
    const byUser = await service.api<{ orders: Json[]; total: number }>("GET", "/orders?partnerUserRef=alice", { key });
    assert.equal(byUser.body.total, 2);
    assert.ok(byUser.body.orders.every((order) => order.partnerUserRef === "alice"));
    const byStatus = await service.api<{ total: number }>("GET", "/orders?status=COMPLETED", { key });
    assert.equal(byStatus.body.total, 0);
  });

  test("paginates with limit, offset and hasMore", async () => {
    const first = await service.api<{ orders: Json[]; hasMore: boolean; limit: number; offset: number }>("GET", "/orders?limit=2", { key });
    assert.equal(first.body.orders.length, 2);
    assert.equal(first.body.hasMore, true);
    assert.equal(first.body.limit, 2);
    const second = await service.api<{ orders: Json[]; hasMore: boolean; offset: number }>("GET", "/orders?limit=2&offset=2", { key });
    assert.equal(second.body.orders.length, 1);
    assert.equal(second.body.hasMore, false);
    assert.equal(second.body.offset, 2);
  });

  test("a page past the last order is empty and still carries the total", async () => {
    // The total rides on the page's rows (one statement); an empty page has none, so it is read alone.
    for (const query of ["offset=3", "offset=1000000", "partnerUserRef=alice&offset=2", "partnerUserRef=nobody"]) {
      const response = await service.api<{ orders: Json[]; total: number; hasMore: boolean }>("GET", `/orders?${query}`, { key });
      assert.equal(response.status, 200, query);
      assert.deepEqual(response.body.orders, [], query);
      assert.equal(response.body.total, query.startsWith("partnerUserRef=nobody") ? 0 : query.startsWith("partnerUserRef=alice") ? 2 : 3, query);
      assert.equal(response.body.hasMore, false, query);
    }
  });

  for (const query of ["limit=0", "limit=101", "limit=abc", "offset=-1", "offset=1.5", "status=UNKNOWN"]) {
    test(`${query} is VALIDATION_ERROR`, async () => {
      const response = await service.api<Json>("GET", `/orders?${query}`, { key });
      assert.equal(response.status, 400);
      assert.equal(response.body.error, "VALIDATION_ERROR");
    });
  }
});

describe("GET /orders/:id", () => {
  test("has every detail field, a computed spread, the bank account and the timeline", async () => {
    const response = await service.api<Json>("GET", `/orders/${created[0]}`, { key });
    assert.equal(response.status, 200);
    const body = response.body;
    for (const field of ["amountRaw", "fxRateSource", "spread", "escrowTxHash", "escrowStatus", "releaseTxHash", "buyerWallet", "lockedAt", "lockExpiresAt", "bankAccount", "cepValidatedAt", "cepTrackingKey", "amlRiskScore", "timeline"]) {
      assert.ok(field in body, `missing ${field}`);
    }
    assert.equal(body.amountRaw, "10000000");
    assert.equal(body.fxRateSource, "partner_quote");
    assert.deepEqual(body.spread, { percent: 0, mxn: 0 });
    assert.equal(body.escrowStatus, "PENDING");
    assert.deepEqual(body.bankAccount, { bankName: "BBVA MEXICO", bankCode: "012", clabe: SELLER_CLABE });
    const timeline = body.timeline as Json[];
    assert.equal(timeline[0]!.event, "CREATED");
    assert.match(String(timeline[0]!.id), /^evt_/);
    assert.ok(typeof timeline[0]!.timestamp === "string");
    assert.ok(Number(body.amlRiskScore) >= 0 && Number(body.amlRiskScore) <= 100);
  });

  test("shows the order and its timeline as of one moment: a transition committed while it is read is in both or in neither", async () => {
    const { rows: partners } = await service.pool.query<{ partner_id: string }>("SELECT partner_id FROM orders WHERE id = $1", [created[1]]);
    const partnerId = partners[0]!.partner_id;
    const refundTxHash = `0x${"ab".repeat(32)}`;
    // A transition's transaction (its column and its timeline entry) commits right after the detail's first statement.
    let statements = 0;
    const interleaved: Queryable = {
      query: (async (...args: Parameters<Queryable["query"]>) => {
        const result = await (service.pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
        if ((statements += 1) === 1) {
          await withTransaction(service.pool, async (client) => {
            await client.query("UPDATE orders SET refund_tx_hash = $2 WHERE id = $1", [created[1], refundTxHash]);
            await client.query("INSERT INTO order_timeline (id, order_id, event, data) VALUES ($1, $2, 'LATE_DEPOSIT_REFUNDED', $3)", [`evt_consistency_${created[1]}`, created[1], { refundTxHash }]);
          });
        }
        return result;
      }) as Queryable["query"],
    };
    const view = { chain: { chainId: 31337, escrowAddress: `0x${"11".repeat(20)}`, tokenAddress: `0x${"22".repeat(20)}` }, listingWindowSeconds: 3600, lockWindowSeconds: 1800 };
    try {
      const during = await orderDetail({ pool: interleaved, view }, partnerId, created[1]!);
      assert.equal(during.refundTxHash, null);
      assert.deepEqual(during.timeline.map((entry) => entry.event), ["CREATED"]);

      const afterwards = await orderDetail({ pool: service.pool, view }, partnerId, created[1]!);
      assert.equal(afterwards.refundTxHash, refundTxHash);
      assert.deepEqual(afterwards.timeline.map((entry) => entry.event), ["CREATED", "LATE_DEPOSIT_REFUNDED"]);
      const { rows: stored } = await service.pool.query<{ id: string; created_at: Date }>("SELECT id, created_at FROM order_timeline WHERE order_id = $1 ORDER BY seq", [created[1]]);
      assert.deepEqual(afterwards.timeline.map((entry) => [entry.id, entry.timestamp]), stored.map((row) => [row.id, row.created_at.toISOString()]));
    } finally {
      await withTransaction(service.pool, async (client) => {
        await client.query("DELETE FROM order_timeline WHERE id = $1", [`evt_consistency_${created[1]}`]);
        await client.query("UPDATE orders SET refund_tx_hash = NULL WHERE id = $1", [created[1]]);
      });
    }
  });

  test("another partner's order is NOT_FOUND", async () => {
    const response = await service.api<Json>("GET", `/orders/${created[0]}`, { key: otherKey });
    assert.equal(response.status, 404);
    assert.equal(response.body.error, "NOT_FOUND");
  });
});

describe("POST /orders/:id/cancel", () => {
  test("a PENDING_DEPOSIT order ends EXPIRED", async () => {
    const id = await placeOrder(key, "dave", 5);
    const response = await service.api<Json & { timeline: Json[] }>("POST", `/orders/${id}/cancel`, { key });
    assert.equal(response.status, 200);
    assert.equal(response.body.status, "EXPIRED");
    assert.deepEqual(response.body.timeline.map((entry) => entry.event), ["CREATED", "EXPIRED"]);
  });

  test("an order that has ended is ORDER_NOT_CANCELLABLE", async () => {
    const id = await placeOrder(key, "erin", 5);
    await service.api("POST", `/orders/${id}/cancel`, { key });
    const again = await service.api<Json>("POST", `/orders/${id}/cancel`, { key });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, "ORDER_NOT_CANCELLABLE");
  });

  test("another partner's order is NOT_FOUND and stays as it was", async () => {
    const id = await placeOrder(key, "frank", 5);
    const response = await service.api<Json>("POST", `/orders/${id}/cancel`, { key: otherKey });
    assert.equal(response.status, 404);
    const detail = await service.api<Json>("GET", `/orders/${id}`, { key });
    assert.equal(detail.body.status, "PENDING_DEPOSIT");
  });
});

describe("deposit timeout", () => {
  // The deposit timer expires an order only once the chain shows its deposit window closed with the
  // escrow empty (decisions 6); this service has no node, so the timer can never know and must wait.
  // Expiry itself is tested on a real chain (test/support/trade-paths.ts, test/chain/rpc-faults.test.ts).
  test("a due deposit timer leaves the order PENDING_DEPOSIT while the chain cannot be read: a deposit may be on its way", async () => {
    const id = await placeOrder(key, "gina", 5);
    await new Promise((resolve) => setTimeout(resolve, 7_000)); // the 2 s timeout, then a recheck 3 s later
    const detail = await service.api<Json & { timeline: Json[] }>("GET", `/orders/${id}`, { key });
    assert.equal(detail.body.status, "PENDING_DEPOSIT");
    assert.deepEqual(detail.body.timeline.map((entry) => entry.event), ["CREATED"]);
  });
});
