// Decision 8: an unreachable CEP portal is asked again with backoff until the lock expires; it is never
// verified late, and the lock-expiry refund returns the USDC to the seller. Decisions 19: for a payment
// reported inside the window, "until the lock expires" is until the escrow's refund grace period ends
// (lockExpiresAt + REFUND_GRACE_SECONDS), and the refund waits for it.
// A 20-second lock window (LOCK_WINDOW_SECONDS, signed into the escrow terms) and a 10-second grace keep the test short.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { startCepPortalProxy, type CepPortalProxy } from "./support/cep-portal-proxy.ts";
import { settledChainTransactions, lockedOrder, orderDetail, sandbox, waitForStatus } from "./support/payments.ts";

const REFUND_GRACE_SECONDS = 10;
let stack: TradeStack;
let proxy: CepPortalProxy;
before(async () => {
  proxy = await startCepPortalProxy();
  stack = await startTradeStack({ CEP_URL: proxy.url, LOCK_WINDOW_SECONDS: "20" }, {}, { refundGraceSeconds: REFUND_GRACE_SECONDS });
  proxy.target = `${stack.service.baseUrl}/simulators/cep`;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

test("a portal down until the lock expires: retried with backoff, never verified late, and the lock-expiry refund returns the USDC", async () => {
  const order = await lockedOrder(stack);
  stack.service.simulators!.cep.setMode("down");
  const paid = await sandbox<{ trackingKey: string }>(stack, order.id, "pay");
  assert.equal(paid.status, 200, JSON.stringify(paid.body));

  // The lock timer's refund and the verifier's last attempt both come due at the lock's end; whichever
  // the chain and the machine see first, the order ends REFUNDED and the payment is never verified.
  const refunded = await waitForStatus(stack, order.id, "REFUNDED", 90_000);
  const queries = proxy.queriesFor(paid.body.trackingKey);
  assert.ok(queries >= 3 && queries <= 9, `asked again with backoff (2, 4, 8 s...), not in a loop: ${queries} queries in 30 s`);
  const graceEndsAt = Date.parse(order.lockExpiresAt!) + REFUND_GRACE_SECONDS * 1000;
  assert.ok(refunded.timeline.some((entry) => entry.event === "LOCK_EXPIRY_REFUND_DEFERRED"), "the refund waited for the report being verified");

  // Back up now, the portal would answer: nothing is verified after the lock's end.
  stack.service.simulators!.cep.setMode("normal");
  await waitFor("no further portal query", async () => {
    const before = proxy.queriesFor(paid.body.trackingKey);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    return proxy.queriesFor(paid.body.trackingKey) === before ? true : undefined;
  });
  const final = await orderDetail(stack, order.id);
  assert.equal(final.status, "REFUNDED");
  assert.equal(final.cepTrackingKey, null);
  assert.equal(refunded.cepTrackingKey, null);
  const payments = final.timeline.filter((entry) => entry.event.startsWith("PAYMENT_"));
  assert.equal(payments[0]!.event, "PAYMENT_REPORTED");
  assert.ok(!payments.some((entry) => entry.event === "PAYMENT_VERIFIED"), "never verified");
  // When the verifier gave up before the refund was seen, it said why.
  for (const rejected of payments.filter((entry) => entry.event === "PAYMENT_REJECTED")) {
    assert.equal(rejected.data.reason, "LOCK_EXPIRED");
    assert.ok(Date.parse(rejected.timestamp) >= graceEndsAt, "given up only once the refund grace period had ended");
  }
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
});
