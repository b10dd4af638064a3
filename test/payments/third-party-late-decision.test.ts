// Decisions 8 and 19 together: the escrow takes confirmPayment only until the lock's expiry +
// REFUND_GRACE_SECONDS. A third-party payment still held after that moment can no longer be released:
// the operator's RELEASE answers 409 INVALID_STATE naming the deadline, and REFUND returns the USDC to
// the seller. Deployed with a 10 s grace so the test can pass it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { chainTransactions, settledChainTransactions, lockedOrder, sandbox, waitForStatus, waitForTimeline, type OrderDetail } from "./support/payments.ts";

const LOCK_WINDOW_SECONDS = 20;
const GRACE_SECONDS = 10;

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) }, {}, { refundGraceSeconds: GRACE_SECONDS });
});
after(() => stack?.close());

interface AdminOrder extends OrderDetail {
  thirdPartyPayment: { releasePossibleUntil: string; decision: string | null } | null;
}

test("a hold decided after the lock's expiry + the refund grace cannot be released, only refunded", async () => {
  const order = await lockedOrder(stack);
  const paid = await sandbox(stack, order.id, "pay", { payerName: "ROSA ELENA QUIROZ LUNA", payerRfc: "QULR850312HJ4" });
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  await waitForTimeline(stack, order.id, "THIRD_PARTY_PAYMENT");
  const held = (await stack.service.admin<AdminOrder>("GET", `/orders/${order.id}`)).body;
  const deadline = Date.parse(held.thirdPartyPayment!.releasePossibleUntil);
  assert.equal(deadline, Date.parse(held.lockExpiresAt!) + GRACE_SECONDS * 1000);
  await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_HELD", undefined, (LOCK_WINDOW_SECONDS + 20) * 1000);
  await waitFor("the refund grace to end", async () => (Date.now() > deadline + 1_000 ? true : undefined), (LOCK_WINDOW_SECONDS + GRACE_SECONDS + 20) * 1000);
  assert.deepEqual(await chainTransactions(stack.service.pool, order.id), [], "nothing sent behind the operator's back");

  const late = await stack.service.admin<{ error: string; message: string }>("POST", `/orders/${order.id}/review`, { decision: "RELEASE" });
  assert.equal(late.status, 409, JSON.stringify(late.body));
  assert.equal(late.body.error, "INVALID_STATE");
  assert.match(late.body.message, /only until .* decide REFUND/);

  const refund = await stack.service.admin("POST", `/orders/${order.id}/review`, { decision: "REFUND", note: "decided after the grace" });
  assert.equal(refund.status, 200, JSON.stringify(refund.body));
  await waitForStatus(stack, order.id, "REFUNDED", 40_000);
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
});
