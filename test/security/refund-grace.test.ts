// Decisions 19: a verified payment beats the clock. The escrow accepts confirmPayment until
// lockExpiresAt + REFUND_GRACE_SECONDS and lets only the service refund an expired lock until then; the
// service's lock-expiry refund waits while a report of a payment made inside the window is being verified,
// asks for it when that report is rejected or when the grace period ends, and a payment verified in the
// grace period is released. An 8-second lock window and a 20-second grace, on the real chain.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { EVENT_DELAY_SECONDS, startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { chainTransactions, settledChainTransactions, lockedOrder, orderDetail, sandbox, waitForStatus, waitForTimeline, type OrderDetail } from "../payments/support/payments.ts";

const LOCK_WINDOW_SECONDS = 8 + EVENT_DELAY_SECONDS;
const REFUND_GRACE_SECONDS = 20;

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) }, {}, { refundGraceSeconds: REFUND_GRACE_SECONDS });
});
after(() => stack?.close());

const cep = () => stack.service.simulators!.cep;

async function blockTime(txHash: string): Promise<number> {
  const client = stack.service.chain!.gateway.publicClient;
  const receipt = await client.getTransactionReceipt({ hash: txHash as `0x${string}` });
  const block = await client.getBlock({ blockNumber: receipt.blockNumber });
  return Number(block.timestamp) * 1000;
}

/**
 * Waits until the chain's own clock (an empty block's timestamp) is past `instant`: block timestamps are
 * whole seconds and can trail the wall clock by a few, so the service's timer may fire while the escrow
 * still counts the lock as running.
 */
async function chainPast(instant: string): Promise<void> {
  const client = stack.service.chain!.gateway.publicClient;
  for (;;) {
    await client.request({ method: "evm_mine" as never, params: [] as never });
    const latest = await client.getBlock({ blockTag: "latest" });
    if (Number(latest.timestamp) * 1000 > Date.parse(instant)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A locked order whose payment (inside the window) is reported while the CEP portal is down. */
async function reportedWhilePortalDown(body: Record<string, unknown> = {}): Promise<OrderDetail> {
  const order = await lockedOrder(stack);
  cep().setMode("down");
  const paid = await sandbox(stack, order.id, "pay", body);
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  return order;
}

test("the escrow was deployed with the short grace the service reads", async () => {
  const grace = await stack.service.chain!.gateway.publicClient.readContract({
    address: stack.deployment.escrowAddress,
    abi: (await import("../../src/chain/escrow-abi.ts")).escrowAbi,
    functionName: "REFUND_GRACE_SECONDS",
  });
  assert.equal(Number(grace), REFUND_GRACE_SECONDS);
});

test("the lock-expiry refund waits for a report being verified; a payment verified in the grace period is released", async () => {
  const order = await reportedWhilePortalDown();
  const deferred = await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_DEFERRED", undefined, 30_000);
  assert.equal(deferred.data.reason, "PAYMENT_BEING_VERIFIED");
  assert.equal(deferred.data.graceEndsAt, new Date(Date.parse(order.lockExpiresAt!) + REFUND_GRACE_SECONDS * 1000).toISOString());
  assert.deepEqual(await chainTransactions(stack.service.pool, order.id), [], "no refund asked for while the report is being verified");

  // The portal comes back after the lock expired (on chain too), inside the grace period: the payment is
  // verified and released.
  await chainPast(order.lockExpiresAt!);
  cep().setMode("normal");
  const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
  const verified = completed.timeline.find((entry) => entry.event === "PAYMENT_VERIFIED")!;
  assert.ok(Date.parse(verified.timestamp) >= Date.parse(order.lockExpiresAt!), "verified after the lock expired");
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["confirmPayment", "MINED"]]);
  const releasedAt = await blockTime(completed.releaseTxHash!);
  assert.ok(releasedAt >= Date.parse(order.lockExpiresAt!), "the escrow took the confirmation after the lock's expiry");
  assert.ok(releasedAt < Date.parse(order.lockExpiresAt!) + REFUND_GRACE_SECONDS * 1000, "inside the grace period");
});

test("a report rejected after the lock expired lets the waiting refund go at once", async () => {
  // The buyer paid (and reported) less than the order's total: once the portal answers, AMOUNT_TOO_LOW.
  const order = await reportedWhilePortalDown({ amountMxn: 100 });
  await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_DEFERRED", undefined, 30_000);
  cep().setMode("normal");
  const refunded = await waitForStatus(stack, order.id, "REFUNDED", 40_000);
  const events = refunded.timeline.map((entry) => entry.event);
  assert.ok(events.indexOf("PAYMENT_REJECTED") < events.lastIndexOf("LOCK_EXPIRY_REFUND_REQUESTED"), events.join());
  assert.equal(refunded.timeline.find((entry) => entry.event === "LOCK_EXPIRY_REFUND_REQUESTED")!.data.after, "PAYMENT_REJECTED");
  const refundedAt = await blockTime(String(refunded.refundTxHash));
  assert.ok(refundedAt < Date.parse(order.lockExpiresAt!) + REFUND_GRACE_SECONDS * 1000, "before the grace period ended");
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
  assert.equal(refunded.timeline.find((entry) => entry.event === "PAYMENT_REJECTED")!.data.reason, "AMOUNT_TOO_LOW");
});

test("a report still unverified when the grace period ends: the refund goes then, never earlier, and nothing is released", async () => {
  const order = await reportedWhilePortalDown();
  await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_DEFERRED", undefined, 30_000);
  const refunded = await waitForStatus(stack, order.id, "REFUNDED", 60_000);
  // The service's decision, on the wall clock: the refund is asked for once the grace has ended. (The
  // block's own timestamp comes from the local node's clock, which may trail the wall clock on a loaded
  // machine; the escrow itself refuses anyone but the service during the grace.)
  const requested = refunded.timeline.find((entry) => entry.event === "LOCK_EXPIRY_REFUND_REQUESTED");
  assert.ok(requested, "the refund was requested");
  assert.ok(Date.parse(requested.timestamp) >= Date.parse(order.lockExpiresAt!) + REFUND_GRACE_SECONDS * 1000, "not before the grace period ended");
  assert.ok(!refunded.timeline.some((entry) => entry.event === "PAYMENT_VERIFIED"));
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
  cep().setMode("normal");
  const final = await orderDetail(stack, order.id);
  assert.equal(final.status, "REFUNDED");
});
