// Decisions 7 and 8, spec "States and transitions": a verified CEP moves the order to PENDING_RELEASE
// and sends the release; the release seen on chain makes it COMPLETED. Real chain, indexer, database.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Address } from "viem";
import { startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { settledChainTransactions, indexedEvents, lockedOrder, outboxEvents, sandbox, usdcBalance, waitForStatus, type Json } from "./support/payments.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(() => stack?.close());

test("a reported payment whose CEP checks out releases the escrow to the buyer and completes the order", async () => {
  const order = await lockedOrder(stack);
  const buyer = order.buyerWallet!;
  const before = await usdcBalance(stack.chain.rpcUrl, stack.deployment.usdcAddress as Address, buyer);

  const pay = await sandbox<Json & { trackingKey: string; payment: Json }>(stack, order.id, "pay");
  assert.equal(pay.status, 200, JSON.stringify(pay.body));
  assert.match(pay.body.trackingKey, /^[A-Z0-9]{10,30}$/);
  assert.equal(pay.body.payment.verification, "PENDING");

  const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
  assert.equal(completed.cepTrackingKey, pay.body.trackingKey);
  assert.ok(completed.cepValidatedAt && !Number.isNaN(Date.parse(completed.cepValidatedAt)));
  assert.match(String(completed.releaseTxHash), /^0x[0-9a-f]{64}$/);
  // completedAt is the release block's time, in whole seconds: a release mined in the second the CEP was
  // validated shows that second, so compare against the validation's second.
  assert.ok(completed.completedAt && Date.parse(completed.completedAt) >= Math.floor(Date.parse(completed.cepValidatedAt!) / 1000) * 1000);
  const events = completed.timeline.map((entry) => entry.event);
  assert.deepEqual(events.slice(events.indexOf("PAYMENT_REPORTED")), ["PAYMENT_REPORTED", "PAYMENT_VERIFIED", "COMPLETED"]);

  const after = await usdcBalance(stack.chain.rpcUrl, stack.deployment.usdcAddress as Address, buyer);
  assert.equal(after - before, BigInt(order.amountRaw), "the buyer received the escrowed USDC (no partner fee on this order)");

  const released = await indexedEvents(stack.service.pool, stack.indexerSchema, order.escrowOrderId, "Released");
  assert.deepEqual(released.map((event) => event.transaction_hash), [completed.releaseTxHash]);
  assert.deepEqual(await settledChainTransactions(stack.service.pool, order.id), [{ action: "confirmPayment", status: "MINED", tx_hash: completed.releaseTxHash }]);
});

test("order.payment_verified then order.completed are recorded in the outbox, in sequence", async () => {
  const order = await lockedOrder(stack);
  const pay = await sandbox<{ trackingKey: string }>(stack, order.id, "pay");
  const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
  const events = await outboxEvents(stack.service.pool, order.id);
  assert.deepEqual(
    events.map((event) => [event.event_type, event.sequence, event.data.status]),
    [
      ["order.created", 1, "PENDING_DEPOSIT"],
      ["order.deposit_confirmed", 2, "ACTIVE"],
      ["order.locked", 3, "LOCKED"],
      ["order.payment_verified", 4, "PENDING_RELEASE"],
      ["order.completed", 5, "COMPLETED"],
    ],
  );
  assert.equal(events[3]!.data.cepTrackingKey, pay.body.trackingKey);
  assert.equal(events[4]!.data.releaseTxHash, completed.releaseTxHash);
  assert.equal(events[4]!.data.completedAt, completed.completedAt);
});
