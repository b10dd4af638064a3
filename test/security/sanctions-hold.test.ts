// Decisions 19: the buyer's wallet is screened when the order is locked. A sanctioned buyer's lock puts
// the order in the operator's review queue (SANCTIONS_HOLD timeline entry, `sanctionsHold` on the admin
// order), and a verified payment does not send confirmPayment while held; the operator decides with
// POST /admin/v1/orders/:id/review (RELEASE or REFUND). On the real chain, indexer and service.
// Sandbox wallet SANCTIONED_SANDBOX_WALLET is on the sandbox sanctions list (data/sanctions/sandbox-sdn.csv).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SANCTIONED_SANDBOX_WALLET } from "../../src/stack/local-node.ts";
import { startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { chainTransactions, settledChainTransactions, lockedOrder, sandbox, waitForStatus, waitForTimeline, type OrderDetail } from "../payments/support/payments.ts";

const SANCTIONED_BUYER = SANCTIONED_SANDBOX_WALLET;
// Long enough to pay and verify inside it, short enough to see the lock expire while held.
const LOCK_WINDOW_SECONDS = 25;

interface AdminOrder extends OrderDetail {
  sanctionsHold: { buyerWallet: string; listEntry: string | null; paymentVerifiedAt: string | null; decision: string | null; note: string | null } | null;
}

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) });
});
after(() => stack?.close());

const adminOrder = async (id: string) => (await stack.service.admin<AdminOrder>("GET", `/orders/${id}`)).body;
const reviewQueue = async () => (await stack.service.admin<{ orders: { id: string; sanctionsHold: unknown }[] }>("GET", "/orders?review=SANCTIONS_HOLD")).body.orders.map((order) => order.id);
const decide = (id: string, decision: string, note?: string) => stack.service.admin<AdminOrder & { error?: string }>("POST", `/orders/${id}/review`, { decision, ...(note ? { note } : {}) });

/** A held order whose payment the service verified: LOCKED, nothing sent. */
async function heldAndPaid(): Promise<OrderDetail> {
  const order = await lockedOrder(stack, { buyerWallet: SANCTIONED_BUYER });
  const paid = await sandbox(stack, order.id, "pay");
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  await waitForTimeline(stack, order.id, "PAYMENT_VERIFIED_HELD");
  return order;
}

describe("a sanctioned buyer's lock", () => {
  let order: OrderDetail;
  before(async () => {
    order = await lockedOrder(stack, { buyerWallet: SANCTIONED_BUYER });
  });

  test("holds the order: a SANCTIONS_HOLD timeline entry and the hold on the admin order", async () => {
    const detail = await adminOrder(order.id);
    const entry = detail.timeline.find((item) => item.event === "SANCTIONS_HOLD");
    assert.ok(entry, "SANCTIONS_HOLD on the timeline");
    assert.equal(String(entry.data.buyerWallet).toLowerCase(), String(detail.buyerWallet).toLowerCase());
    assert.equal(entry.data.listEntry, "SANDBOX SANCTIONED WALLET");
    assert.equal(detail.sanctionsHold?.decision, null);
    assert.equal(detail.sanctionsHold?.listEntry, "SANDBOX SANCTIONED WALLET");
  });

  test("puts the order in the operator's review queue and counts it in the stats", async () => {
    assert.ok((await reviewQueue()).includes(order.id));
    const stats = await stack.service.admin<{ queues: { sanctionsHolds: number } }>("GET", "/stats");
    assert.ok(stats.body.queues.sanctionsHolds >= 1);
  });

  test("a buyer who is not listed is not held", async () => {
    const clean = await lockedOrder(stack, { buyerWallet: 2 });
    const detail = await adminOrder(clean.id);
    assert.equal(detail.sanctionsHold, null);
    assert.ok(!(await reviewQueue()).includes(clean.id));
    const refused = await decide(clean.id, "RELEASE");
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error, "INVALID_STATE");
  });
});

describe("a verified payment while held", () => {
  let order: OrderDetail;
  before(async () => {
    order = await heldAndPaid();
  });

  test("is recorded but sends no release: the order stays LOCKED with no transaction", async () => {
    // Give a release, if one were wrongly requested, time to be recorded.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const detail = await adminOrder(order.id);
    assert.equal(detail.status, "LOCKED");
    assert.ok(detail.sanctionsHold?.paymentVerifiedAt);
    assert.deepEqual(await chainTransactions(stack.service.pool, order.id), []);
    assert.equal(await stack.service.chain!.gateway.escrowStatus(order.escrowOrderId as `0x${string}`), "Locked");
    const hooks = await stack.service.pool.query<{ event_type: string }>("SELECT event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [order.id]);
    assert.ok(!hooks.rows.some((row) => row.event_type === "order.payment_verified"));
  });

  test("the operator's RELEASE sends the release once and the order completes", async () => {
    const decided = await decide(order.id, "RELEASE", "list match reviewed: delisted entity");
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.sanctionsHold?.decision, "RELEASE");
    const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
    assert.match(String(completed.releaseTxHash), /^0x[0-9a-f]{64}$/);
    const events = completed.timeline.map((entry) => entry.event);
    assert.deepEqual(events.slice(events.indexOf("HOLD_DECIDED")), ["HOLD_DECIDED", "PAYMENT_VERIFIED", "COMPLETED"]);
    assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["confirmPayment", "MINED"]]);
    assert.ok(!(await reviewQueue()).includes(order.id), "decided orders leave the queue");
    const again = await decide(order.id, "REFUND");
    assert.equal(again.status, 409);
  });
});

describe("a held, paid order whose lock expires", () => {
  let order: OrderDetail;
  before(async () => {
    order = await heldAndPaid();
  });

  test("is not refunded by the lock timer; the operator's REFUND then refunds the seller", async () => {
    await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_HELD", undefined, (LOCK_WINDOW_SECONDS + 20) * 1000);
    assert.equal((await adminOrder(order.id)).status, "LOCKED");
    assert.deepEqual(await chainTransactions(stack.service.pool, order.id), []);

    const decided = await decide(order.id, "REFUND", "sanctioned counterparty");
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const refunded = await waitForStatus(stack, order.id, "REFUNDED", 40_000);
    assert.match(String(refunded.refundTxHash), /^0x[0-9a-f]{64}$/);
    assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
    await waitFor("no release ever", async () => (refunded.timeline.some((entry) => entry.event === "COMPLETED") ? undefined : true));
  });
});

describe("a held buyer's dispute", () => {
  let order: OrderDetail;
  before(async () => {
    order = await lockedOrder(stack, { buyerWallet: SANCTIONED_BUYER });
    const dispute = await sandbox(stack, order.id, "dispute", { by: "BUYER" });
    assert.equal(dispute.status, 200, JSON.stringify(dispute.body));
    await waitForStatus(stack, order.id, "DISPUTED");
  });

  const resolve = (outcome: string) => stack.service.admin<AdminOrder & { error?: string; message?: string }>("POST", `/orders/${order.id}/resolve`, { outcome });

  test("cannot pay the buyer: BUYER and NO_FAULT_RELEASE are 409 INVALID_STATE and nothing is sent", async () => {
    for (const outcome of ["BUYER", "NO_FAULT_RELEASE"]) {
      const refused = await resolve(outcome);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.error, "INVALID_STATE");
      assert.match(String(refused.body.message), /sanctions/);
    }
    const detail = await adminOrder(order.id);
    assert.equal(detail.status, "DISPUTED");
    assert.equal((detail as AdminOrder & { dispute: { resolutionRequest: unknown } }).dispute.resolutionRequest, null);
    assert.deepEqual(await chainTransactions(stack.service.pool, order.id), []);
    assert.equal(await stack.service.chain!.gateway.escrowStatus(order.escrowOrderId as `0x${string}`), "Disputed");
  });

  test("is resolved for the seller: the seller is refunded", async () => {
    const resolved = await resolve("SELLER");
    assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
    const refunded = await waitForStatus(stack, order.id, "REFUNDED", 40_000);
    assert.match(String(refunded.refundTxHash), /^0x[0-9a-f]{64}$/);
    assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["resolveDispute", "MINED"]]);
  });
});
