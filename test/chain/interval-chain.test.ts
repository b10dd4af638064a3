// The trade paths as production runs them (decisions 15, issue 22): a block every 2 s and none in
// between, the indexer polling every second, escrow events applied 3 blocks deep. Every other trade test
// runs on an automining chain; `TRADE_CHAIN=interval` runs any of them on this one too.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { INTERVAL_CHAIN, startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { cancelledTrade, completedTrade, disputedTrade, lockExpiry } from "../support/trade-paths.ts";

const STEP_MS = 90_000;
let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: "30" }, {}, { mining: "interval" });
});
after(() => stack?.close());

describe("on a chain mining a block every 2 s with 3 confirmations", { concurrency: true, timeout: 240_000 }, () => {
  test("the stack runs as production does: interval mining, CHAIN_CONFIRMATIONS 3", () => {
    assert.equal(stack.mining, "interval");
    assert.equal(stack.service.config.chainConfirmations, INTERVAL_CHAIN.confirmations);
  });

  test("a trade completes: deposit, lock, payment, release", async () => {
    const detail = await completedTrade(stack, STEP_MS);
    assert.match(String(detail.releaseTxHash), /^0x[0-9a-f]{64}$/);
  });

  test("a cancelled ACTIVE order is refunded on chain", async () => {
    const detail = await cancelledTrade(stack, STEP_MS);
    assert.match(String(detail.refundTxHash), /^0x[0-9a-f]{64}$/);
  });

  test("an unpaid lock expires and the seller is refunded", async () => {
    const detail = await lockExpiry(stack, STEP_MS);
    assert.deepEqual(detail.timeline.map((entry) => entry.event).slice(-2), ["LOCK_EXPIRED", "REFUNDED"]);
  });

  test("a dispute resolved for the buyer releases the escrow", async () => {
    const detail = await disputedTrade(stack, STEP_MS);
    assert.match(String(detail.releaseTxHash), /^0x[0-9a-f]{64}$/);
  });
});
