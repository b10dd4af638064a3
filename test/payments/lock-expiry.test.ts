// Decision 8: an unreachable CEP portal is asked again with backoff until the lock expires; then the
// verification gives up with a timeline entry, and the lock-expiry refund returns the USDC to the seller.
// A 20-second lock window (LOCK_WINDOW_SECONDS, signed into the escrow terms) keeps the test short.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { startCepPortalProxy, type CepPortalProxy } from "./support/cep-portal-proxy.ts";
import { chainTransactions, lockedOrder, orderDetail, sandbox, waitForStatus, waitForTimeline } from "./support/payments.ts";

let stack: TradeStack;
let proxy: CepPortalProxy;
before(async () => {
  proxy = await startCepPortalProxy();
  stack = await startTradeStack({ CEP_URL: proxy.url, LOCK_WINDOW_SECONDS: "20" });
  proxy.target = `${stack.service.baseUrl}/simulators/cep`;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

test("a portal down until the lock expires: retried with backoff, then PAYMENT_REJECTED LOCK_EXPIRED, and the lock-expiry refund follows", async () => {
  const order = await lockedOrder(stack);
  stack.service.simulators!.cep.setMode("down");
  const paid = await sandbox<{ trackingKey: string }>(stack, order.id, "pay");
  assert.equal(paid.status, 200, JSON.stringify(paid.body));

  const rejected = await waitForTimeline(stack, order.id, "PAYMENT_REJECTED", () => true, 60_000);
  assert.equal(rejected.data.reason, "LOCK_EXPIRED");
  assert.match(String(rejected.data.message), /before the lock expired at .*last answered: unavailable \(HTTP 500 on valida\.do\)/);
  assert.ok(Date.parse(rejected.timestamp) >= Date.parse(order.lockExpiresAt!), "given up only once the lock had expired");
  const queries = proxy.queriesFor(paid.body.trackingKey);
  assert.ok(queries >= 3 && queries <= 8, `asked again with backoff (2, 4, 8 s...), not in a loop: ${queries} queries in 20 s`);

  // Back up now, the portal would answer: nothing is verified after the lock's end.
  stack.service.simulators!.cep.setMode("normal");
  const refunded = await waitForStatus(stack, order.id, "REFUNDED", 60_000);
  assert.equal(refunded.cepTrackingKey, null);
  assert.deepEqual(refunded.timeline.map((entry) => entry.event).filter((event) => event.startsWith("PAYMENT_")), ["PAYMENT_REPORTED", "PAYMENT_REJECTED"]);
  assert.deepEqual((await chainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
  await waitFor("no further portal query", async () => {
    const before = proxy.queriesFor(paid.body.trackingKey);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    return proxy.queriesFor(paid.body.trackingKey) === before ? true : undefined;
  });
  assert.equal((await orderDetail(stack, order.id)).status, "REFUNDED");
});
