// Pausing stops lock time (decisions 19): no refund by lock expiry while paused, and each lock's
// effective expiry (lockExpiryOf), which also bounds confirmPayment, moves by the time the escrow was
// paused during the lock. Disputes freeze the clock; NO_FAULT_RETRY starts a fresh window.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keccak256, toHex } from "viem";
import { disputeOutcome } from "../../src/chain/escrow-abi.ts";
import { GRACE, assertEvent, escrowEvents, expectRevert, loadFixture } from "./fixtures.ts";
import type { Fixture } from "./fixtures.ts";

let cepCounter = 0;
const newCep = () => keccak256(toHex(`pause-cep-${++cepCounter}`));

/** Timestamp of the block a receipt is in. */
async function blockTime(f: Fixture, receipt: { blockNumber: bigint }): Promise<bigint> {
  return (await f.publicClient.getBlock({ blockNumber: receipt.blockNumber })).timestamp;
}

/** Pauses at `at` and unpauses at `until` (block timestamps); returns the unpause receipt. */
async function pauseBetween(f: Fixture, at: bigint, until: bigint) {
  await f.testClient.setNextBlockTimestamp({ timestamp: at });
  await f.tx(f.admin, "pause", []);
  await f.testClient.setNextBlockTimestamp({ timestamp: until });
  return f.tx(f.admin, "unpause", []);
}

describe("pausing stops lock time", () => {
  it("while paused no lock can be refunded by expiry, not even long after it, by anyone", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 600n });
    const expiry = await f.read("lockExpiryOf", [terms.orderId]);
    await f.tx(f.admin, "pause", []);
    await f.travel(600n + GRACE + 10_000n);
    for (const who of [f.stranger, f.service, f.seller]) {
      await expectRevert(f.send(who, "refundExpiredLock", [terms.orderId]), "EnforcedPause");
    }
    // The effective expiry keeps moving while the pause lasts.
    const now = await f.now();
    const pausedAt = await f.read("pausedAt", []);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), expiry + (now - pausedAt));
    assert.equal(await f.read("pausedTotalNow", []), now - pausedAt);
    assert.equal((await f.getOrder(terms.orderId)).status, 2);
  });

  it("moves each lock's expiry by the pause time during the lock; unpause reports the duration", async () => {
    const f = await loadFixture();
    // Locked before the pause, locked after it.
    const early = await f.depositAndLock({ lockWindow: 1000n });
    const earlyExpiry = (await f.getOrder(early.orderId)).lockExpiresAt;
    // Times relative to the latest block (a snapshot revert leaves it behind the wall clock).
    const start = await f.now();
    const receipt = await pauseBetween(f, start + 100n, start + 400n);
    const events = escrowEvents(receipt, f.escrow);
    assert.deepEqual(events.map((e) => e.eventName), ["Unpaused", "LockClockResumed"]);
    assertEvent(events[1], "LockClockResumed", { duration: 300n, pausedTotal: 300n });
    assert.equal(await f.read("pausedTotal", []), 300n);
    assert.equal(await f.read("pausedAt", []), 0n);
    const late = await f.depositAndLock({ lockWindow: 1000n });
    const lateOrder = await f.getOrder(late.orderId);
    assert.equal(lateOrder.pausedTotalAtLock, 300n);
    assert.equal((await f.getOrder(early.orderId)).pausedTotalAtLock, 0n);

    assert.equal(await f.read("lockExpiryOf", [early.orderId]), earlyExpiry + 300n);
    assert.equal(await f.read("lockExpiryOf", [late.orderId]), lateOrder.lockExpiresAt);

    // A second pause moves both.
    const now = await f.now();
    await pauseBetween(f, now + 10n, now + 60n);
    assert.equal(await f.read("pausedTotal", []), 350n);
    assert.equal(await f.read("lockExpiryOf", [early.orderId]), earlyExpiry + 350n);
    assert.equal(await f.read("lockExpiryOf", [late.orderId]), lateOrder.lockExpiresAt + 50n);

    // The refund follows the moved expiry: LockNotExpired one second before it, the service at it.
    const moved = earlyExpiry + 350n;
    await f.testClient.setNextBlockTimestamp({ timestamp: moved - 1n });
    await expectRevert(f.send(f.service, "refundExpiredLock", [early.orderId]), "LockNotExpired", [moved]);
    await f.testClient.setNextBlockTimestamp({ timestamp: moved });
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [early.orderId]), "RefundGracePeriod", [moved + GRACE]);
    await f.tx(f.service, "refundExpiredLock", [early.orderId]);
  });

  it("moves the confirmation deadline too: a payment confirmed after a pause is not too late", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 600n });
    const expiry = (await f.getOrder(terms.orderId)).lockExpiresAt;
    // Paused from just before the deadline for a day: without the pause the window would have closed.
    await pauseBetween(f, expiry + GRACE - 5n, expiry + GRACE - 5n + 86_400n);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry + GRACE + 86_400n - 1n });
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
  });

  it("an expired lock stays refundable only by the service after the unpause until the moved grace ends", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 600n });
    const expiry = (await f.getOrder(terms.orderId)).lockExpiresAt;
    // Paused in the middle of the grace period for 1000 s.
    await pauseBetween(f, expiry + 100n, expiry + 1100n);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry + GRACE + 999n });
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "RefundGracePeriod", [expiry + 1000n + GRACE]);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry + GRACE + 1000n });
    await f.tx(f.stranger, "refundExpiredLock", [terms.orderId]);
  });

  it("a dispute freezes the clock (lockExpiryOf is 0); NO_FAULT_RETRY starts a fresh window that only later pauses extend", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 1000n });
    await f.tx(f.buyer, "openDispute", [terms.orderId]);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), 0n);
    // A pause while disputed does not carry over into the retried lock.
    const now = await f.now();
    await pauseBetween(f, now + 10n, now + 510n);
    assert.equal(await f.read("pausedTotal", []), 500n);
    const receipt = await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    const retriedAt = await blockTime(f, receipt);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "DisputeResolved", { orderId: terms.orderId, outcome: 4, newLockExpiresAt: retriedAt + 1000n });
    const order = await f.getOrder(terms.orderId);
    assert.equal(order.pausedTotalAtLock, 500n);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), retriedAt + 1000n);
    // A pause after the retry moves it.
    await pauseBetween(f, retriedAt + 10n, retriedAt + 30n);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), retriedAt + 1020n);
  });

  it("NO_FAULT_RETRY while paused: the new window only starts running at the unpause", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 1000n });
    await f.tx(f.seller, "openDispute", [terms.orderId]);
    const pauseReceipt = await f.tx(f.admin, "pause", []);
    const pausedAt = await blockTime(f, pauseReceipt);
    await f.testClient.setNextBlockTimestamp({ timestamp: pausedAt + 200n });
    const retry = await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    assert.equal(await blockTime(f, retry), pausedAt + 200n);
    assert.equal((await f.getOrder(terms.orderId)).pausedTotalAtLock, 200n);
    await f.testClient.setNextBlockTimestamp({ timestamp: pausedAt + 700n });
    await f.tx(f.admin, "unpause", []);
    // Retried at +200 with a 1000 s window, then 500 s more of pause: expiry at +1700.
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), pausedAt + 1700n);
  });
});
