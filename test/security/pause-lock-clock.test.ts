// Decisions 19: pausing the escrow stops time for locks. A lock's expiry moves by the time the escrow was
// paused, no locked order is refunded while paused, and the service's lock timers follow the chain's
// effective expiry (the escrow's lockExpiryOf). An 8-second lock window, on the real chain.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { EVENT_DELAY_SECONDS, startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { chainTransactions, settledChainTransactions, lockedOrder, orderDetail, waitForStatus } from "../payments/support/payments.ts";

const LOCK_WINDOW_SECONDS = 8 + EVENT_DELAY_SECONDS;

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) });
});
after(() => stack?.close());

/** The escrow admin (sandbox: dev account 10) pauses or unpauses; returns the block time. */
async function setPaused(paused: boolean): Promise<number> {
  const gateway = stack.service.chain!.gateway;
  const admin = gateway.walletClient(privateKeyToAccount(devAccounts[DEV_ACCOUNT.admin].privateKey));
  const hash = await admin.writeContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: paused ? "pause" : "unpause", chain: gateway.chain });
  const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, "success");
  return Number((await gateway.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp) * 1000;
}

test("a pause across the lock's expiry: no refund while paused, the expiry moves by the paused time, the refund comes after it", async () => {
  const order = await lockedOrder(stack);
  const lockExpiresAt = Date.parse(order.lockExpiresAt!);
  const pausedAt = await setPaused(true);
  let unpausedAt: number;
  try {
    // Paused past the original expiry: the lock timer fires, finds the escrow paused, and sends nothing.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lockExpiresAt - Date.now()) + 4_000));
    assert.equal((await orderDetail(stack, order.id)).status, "LOCKED");
    assert.deepEqual(await chainTransactions(stack.service.pool, order.id), [], "no refund asked for while paused");
  } finally {
    unpausedAt = await setPaused(false);
  }
  const pausedFor = unpausedAt - pausedAt;
  const movedExpiry = lockExpiresAt + pausedFor;
  const chainExpiry = await stack.service.chain!.gateway.lockExpiryOf(order.escrowOrderId as Hex);
  assert.equal(Number(chainExpiry) * 1000, movedExpiry, "the escrow's effective expiry moved by the paused time");

  // The service's timer follows the chain: the order's expiry moves, then the refund comes after it.
  const moved = await waitFor("the order's lock expiry to move", async () => {
    const detail = await orderDetail(stack, order.id);
    return detail.timeline.find((entry) => entry.event === "LOCK_EXPIRY_MOVED") ? detail : undefined;
  });
  assert.equal(moved.lockExpiresAt, new Date(movedExpiry).toISOString());
  const entry = moved.timeline.find((item) => item.event === "LOCK_EXPIRY_MOVED")!;
  assert.equal(entry.data.from, order.lockExpiresAt);
  const timers = await stack.service.pool.query("SELECT 1 FROM pgboss.job WHERE name = 'orders.timer' AND data->>'orderId' = $1 AND data->>'dueAt' = $2", [
    order.id,
    new Date(movedExpiry).toISOString(),
  ]);
  assert.equal(timers.rowCount, 1, "a lock timer for the moved expiry");

  const refunded = await waitForStatus(stack, order.id, "REFUNDED", 40_000);
  const client = stack.service.chain!.gateway.publicClient;
  const receipt = await client.getTransactionReceipt({ hash: refunded.timeline.find((item) => item.event === "REFUNDED")!.data.refundTxHash as Hex });
  const refundedAt = Number((await client.getBlock({ blockNumber: receipt.blockNumber })).timestamp) * 1000;
  assert.ok(refundedAt >= movedExpiry, `refunded at ${new Date(refundedAt).toISOString()}, not before the moved expiry ${new Date(movedExpiry).toISOString()}`);
  assert.deepEqual((await settledChainTransactions(stack.service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
});
