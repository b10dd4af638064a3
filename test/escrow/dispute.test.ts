// openDispute, resolveDispute (all five outcomes) and reputation.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, keccak256, toHex } from "viem";
import { ARBITER_ROLE } from "../../src/stack/deploy.ts";
import { disputeOutcome } from "../../src/chain/escrow-abi.ts";
import { USDC, assertEvent, escrowEvents, expectRevert, loadFixture, newOrderId } from "./fixtures.ts";
import type { Fixture, OrderTerms } from "./fixtures.ts";

let cepCounter = 0;
const newCep = () => keccak256(toHex(`dispute-cep-${++cepCounter}`));

async function disputed(f: Fixture, overrides: Partial<OrderTerms> = {}, by = f.buyer): Promise<OrderTerms> {
  const terms = await f.depositAndLock(overrides);
  await f.tx(by, "openDispute", [terms.orderId]);
  return terms;
}

describe("openDispute", () => {
  it("lets the buyer or the seller freeze a Locked order", async () => {
    const f = await loadFixture();
    const a = await f.depositAndLock();
    const receiptA = await f.tx(f.buyer, "openDispute", [a.orderId]);
    assertEvent(escrowEvents(receiptA, f.escrow)[0], "DisputeOpened", { orderId: a.orderId, openedBy: f.buyer.account.address, byBuyer: true });
    const b = await f.depositAndLock();
    const receiptB = await f.tx(f.seller, "openDispute", [b.orderId]);
    assertEvent(escrowEvents(receiptB, f.escrow)[0], "DisputeOpened", { orderId: b.orderId, openedBy: f.seller.account.address, byBuyer: false });
    assert.equal((await f.getOrder(a.orderId)).status, 3);
    assert.equal((await f.getOrder(b.orderId)).status, 3);
  });

  it("refuses third parties (the service included), non-Locked orders and a second dispute", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock();
    for (const who of [f.stranger, f.service, f.arbiter, f.admin]) {
      await expectRevert(f.send(who, "openDispute", [terms.orderId]), "NotOrderParty", [who.account.address]);
    }
    const active = await f.deposit();
    await expectRevert(f.send(f.seller, "openDispute", [active.terms.orderId]), "InvalidStatus", [active.terms.orderId, 1]);
    const unknown = newOrderId();
    await expectRevert(f.send(f.seller, "openDispute", [unknown]), "InvalidStatus", [unknown, 0]);
    await f.tx(f.buyer, "openDispute", [terms.orderId]);
    await expectRevert(f.send(f.seller, "openDispute", [terms.orderId]), "InvalidStatus", [terms.orderId, 3]);
  });

  it("stops the lock timer: a disputed order cannot be refunded by timeout, confirmed or cancelled", async () => {
    const f = await loadFixture();
    const terms = await disputed(f, { lockWindow: 60n });
    await f.travel(3600n);
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "InvalidStatus", [terms.orderId, 3]);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]), "InvalidStatus", [terms.orderId, 3]);
    await expectRevert(f.send(f.service, "cancel", [terms.orderId]), "InvalidStatus", [terms.orderId, 3]);
    assert.equal(await f.balanceOf(f.escrow), terms.amount);
  });
});

describe("resolveDispute", () => {
  it("BUYER: releases with the normal fee split, no CEP hash, seller loses 50 reputation", async () => {
    const f = await loadFixture();
    const terms = await disputed(f, { amount: 200n * USDC, feeBps: 1000, treasuryShareBps: 3000 });
    const buyerBefore = await f.balanceOf(f.buyer.account.address);
    const receipt = await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.BUYER, f.buyer.account.address]);
    const events = escrowEvents(receipt, f.escrow);
    assert.deepEqual(events.map((e) => e.eventName), ["DisputeResolved", "ReputationChanged", "Released"]);
    assertEvent(events[0], "DisputeResolved", { orderId: terms.orderId, outcome: 0, newLockExpiresAt: 0n });
    assertEvent(events[1], "ReputationChanged", { account: f.seller.account.address, delta: -50n, newScore: -50n });
    assertEvent(events[2], "Released", {
      orderId: terms.orderId,
      buyer: f.buyer.account.address,
      buyerAmount: 180n * USDC,
      feeRecipient: f.partner,
      feeAmount: 14n * USDC,
      treasury: f.treasury,
      treasuryAmount: 6n * USDC,
      cepHash: `0x${"00".repeat(32)}`,
    });
    assert.equal((await f.balanceOf(f.buyer.account.address)) - buyerBefore, 180n * USDC);
    assert.equal(await f.read("reputation", [f.seller.account.address]), -50n);
    assert.equal(await f.read("reputation", [f.buyer.account.address]), 0n);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
  });

  it("SELLER: refunds the seller (reason DISPUTE), buyer loses 50 reputation", async () => {
    const f = await loadFixture();
    const terms = await disputed(f, { amount: 30n * USDC }, f.seller);
    const sellerBefore = await f.balanceOf(f.seller.account.address);
    const receipt = await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.SELLER, f.buyer.account.address]);
    const events = escrowEvents(receipt, f.escrow);
    assert.deepEqual(events.map((e) => e.eventName), ["DisputeResolved", "ReputationChanged", "Refunded"]);
    assertEvent(events[0], "DisputeResolved", { orderId: terms.orderId, outcome: 1, newLockExpiresAt: 0n });
    assertEvent(events[1], "ReputationChanged", { account: f.buyer.account.address, delta: -50n, newScore: -50n });
    assertEvent(events[2], "Refunded", { orderId: terms.orderId, seller: f.seller.account.address, amount: 30n * USDC, reason: 3 });
    assert.equal((await f.balanceOf(f.seller.account.address)) - sellerBefore, 30n * USDC);
    assert.equal(await f.read("reputation", [f.buyer.account.address]), -50n);
    assert.equal(await f.read("reputation", [f.seller.account.address]), 0n);
    assert.equal((await f.getOrder(terms.orderId)).status, 5);
  });

  it("NO_FAULT_RELEASE and NO_FAULT_REFUND move the funds without any penalty", async () => {
    const f = await loadFixture();
    const release = await disputed(f, { amount: 10n * USDC, feeBps: 0 });
    const refund = await disputed(f, { amount: 20n * USDC });
    const buyerBefore = await f.balanceOf(f.buyer.account.address);
    const sellerBefore = await f.balanceOf(f.seller.account.address);
    const r1 = await f.tx(f.arbiter, "resolveDispute", [release.orderId, disputeOutcome.NO_FAULT_RELEASE, f.buyer.account.address]);
    const r2 = await f.tx(f.arbiter, "resolveDispute", [refund.orderId, disputeOutcome.NO_FAULT_REFUND, f.buyer.account.address]);
    assert.deepEqual(escrowEvents(r1, f.escrow).map((e) => e.eventName), ["DisputeResolved", "Released"]);
    assert.deepEqual(escrowEvents(r2, f.escrow).map((e) => e.eventName), ["DisputeResolved", "Refunded"]);
    assertEvent(escrowEvents(r1, f.escrow)[0], "DisputeResolved", { orderId: release.orderId, outcome: 2, newLockExpiresAt: 0n });
    assertEvent(escrowEvents(r2, f.escrow)[0], "DisputeResolved", { orderId: refund.orderId, outcome: 3, newLockExpiresAt: 0n });
    assert.equal((await f.balanceOf(f.buyer.account.address)) - buyerBefore, 10n * USDC);
    assert.equal((await f.balanceOf(f.seller.account.address)) - sellerBefore, 20n * USDC);
    assert.equal(await f.read("reputation", [f.buyer.account.address]), 0n);
    assert.equal(await f.read("reputation", [f.seller.account.address]), 0n);
    assert.equal(await f.balanceOf(f.escrow), 0n);
  });

  it("NO_FAULT_RETRY returns the order to Locked with a fresh lock window, then it completes or expires normally", async () => {
    const f = await loadFixture();
    const terms = await disputed(f, { lockWindow: 1000n });
    await f.travel(5000n);
    const receipt = await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    const { timestamp } = await f.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const events = escrowEvents(receipt, f.escrow);
    assert.equal(events.length, 1);
    assertEvent(events[0], "DisputeResolved", { orderId: terms.orderId, outcome: 4, newLockExpiresAt: timestamp + 1000n });
    const order = await f.getOrder(terms.orderId);
    assert.equal(order.status, 2);
    assert.equal(order.lockExpiresAt, timestamp + 1000n);
    assert.equal(getAddress(order.buyer), getAddress(f.buyer.account.address));
    assert.equal(await f.balanceOf(f.escrow), terms.amount);

    await expectRevert(f.send(f.service, "refundExpiredLock", [terms.orderId]), "LockNotExpired", [timestamp + 1000n]);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), timestamp + 1000n);
    // It can be disputed again, retried again, and finally confirmed.
    await f.tx(f.seller, "openDispute", [terms.orderId]);
    await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);

    const expiring = await disputed(f, { lockWindow: 1000n });
    await f.tx(f.arbiter, "resolveDispute", [expiring.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    await f.travel(1000n);
    await f.tx(f.service, "refundExpiredLock", [expiring.orderId]);
    assert.equal((await f.getOrder(expiring.orderId)).status, 5);
  });

  it("validates the outcome, the role and the state", async () => {
    const f = await loadFixture();
    const terms = await disputed(f);
    await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, 5, f.buyer.account.address]), "InvalidOutcome", [5]);
    await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, 255, f.buyer.account.address]), "InvalidOutcome", [255]);
    for (const who of [f.service, f.admin, f.buyer, f.seller]) {
      await expectRevert(f.send(who, "resolveDispute", [terms.orderId, 0, f.buyer.account.address]), "AccessControlUnauthorizedAccount", [who.account.address, ARBITER_ROLE]);
    }
    const locked = await f.depositAndLock();
    await expectRevert(f.send(f.arbiter, "resolveDispute", [locked.orderId, 0, f.buyer.account.address]), "InvalidStatus", [locked.orderId, 2]);
    await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.SELLER, f.buyer.account.address]);
    await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, 0, f.buyer.account.address]), "InvalidStatus", [terms.orderId, 5]);
  });

  it("decides only the dispute of the buyer it names: any other name reverts (NotLockHolder) for every outcome", async () => {
    const f = await loadFixture();
    const terms = await disputed(f);
    const other = f.stranger.account.address;
    for (const outcome of Object.values(disputeOutcome)) {
      await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, outcome, other]), "NotLockHolder", [other, f.buyer.account.address]);
    }
    assert.equal((await f.getOrder(terms.orderId)).status, 3);
    assert.deepEqual([await f.read("reputation", [f.buyer.account.address]), await f.read("reputation", [f.seller.account.address])], [0n, 0n]);
    await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.BUYER, f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
  });

  it("accumulates reputation per account across disputes", async () => {
    const f = await loadFixture();
    const first = await disputed(f);
    const second = await disputed(f);
    const third = await disputed(f);
    await f.tx(f.arbiter, "resolveDispute", [first.orderId, disputeOutcome.BUYER, f.buyer.account.address]);
    const receipt = await f.tx(f.arbiter, "resolveDispute", [second.orderId, disputeOutcome.BUYER, f.buyer.account.address]);
    assertEvent(escrowEvents(receipt, f.escrow)[1], "ReputationChanged", { account: f.seller.account.address, delta: -50n, newScore: -100n });
    await f.tx(f.arbiter, "resolveDispute", [third.orderId, disputeOutcome.SELLER, f.buyer.account.address]);
    assert.equal(await f.read("reputation", [f.seller.account.address]), -100n);
    assert.equal(await f.read("reputation", [f.buyer.account.address]), -50n);
    assert.equal(await f.read("reputation", [f.stranger.account.address]), 0n);
  });
});
