import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { initialTransition, transition } from "xstate";
import { orderMachine, type OrderEvent } from "../../src/orders/machine.ts";

// Decisions 19 on the pure order machine (the chain tests beside this file run the same rules on the real
// stack): late deposits refunded from a final state, sanctions holds, the refund grace period, and lock
// expiries moved by an escrow pause.

const T0 = "2026-11-21T10:00:00.000Z";
const DEPOSIT_DUE = "2026-11-21T10:30:00.000Z";
const LISTING_DUE = "2026-11-22T10:00:00.000Z";
const LOCK_DUE = "2026-11-21T16:00:00.000Z";
const GRACE_SECONDS = 3600;
const GRACE_DUE = "2026-11-21T17:00:00.000Z";
const IN_GRACE = "2026-11-21T16:30:00.000Z";
const payment = { cepTrackingKey: "MBAN01002611210001", operationDate: "2026-11-21", senderBankCode: "40012" };
const otherPayment = { ...payment, cepTrackingKey: "MBAN01002611210002" };

const ev = {
  deposit: { type: "DEPOSIT_CONFIRMED", txHash: "0xd", seller: "0xseller", listingExpiresAt: LISTING_DUE, at: T0 },
  lock: { type: "LOCKED", txHash: "0xl", buyer: "0xbuyer", lockExpiresAt: LOCK_DUE, at: T0, refundGraceSeconds: GRACE_SECONDS },
  sanctionedLock: { type: "LOCKED", txHash: "0xl", buyer: "0xbuyer", lockExpiresAt: LOCK_DUE, at: T0, refundGraceSeconds: GRACE_SECONDS, sanctionedBuyer: { listEntry: "LISTED" } },
  depositTimer: { type: "TIMER_FIRED", timer: "DEPOSIT_TIMEOUT", dueAt: DEPOSIT_DUE, at: DEPOSIT_DUE },
  lockTimer: { type: "TIMER_FIRED", timer: "LOCK_TIMEOUT", dueAt: LOCK_DUE, at: LOCK_DUE },
  graceTimer: { type: "TIMER_FIRED", timer: "REFUND_GRACE_TIMEOUT", dueAt: GRACE_DUE, at: GRACE_DUE },
  cancel: { type: "CANCEL", at: T0 },
  report: { type: "PAYMENT_REPORTED", ...payment, amountMxn: "1725.00", at: T0 },
  reportOutsideWindow: { type: "PAYMENT_REPORTED", ...otherPayment, operationDate: "2026-11-25", amountMxn: "1725.00", at: T0 },
  verified: { type: "PAYMENT_VERIFIED", ...payment, cepHash: "0xcep", amountMxn: "1725.00", paidAt: T0, at: T0 },
  verifiedInGrace: { type: "PAYMENT_VERIFIED", ...payment, cepHash: "0xcep", amountMxn: "1725.00", paidAt: T0, at: IN_GRACE },
  verifiedAfterGrace: { type: "PAYMENT_VERIFIED", ...payment, cepHash: "0xcep", amountMxn: "1725.00", paidAt: T0, at: GRACE_DUE },
  rejectedInGrace: { type: "PAYMENT_REJECTED", ...payment, reason: "AMOUNT_TOO_LOW", message: "short", at: IN_GRACE },
  refundedCancel: { type: "REFUNDED", txHash: "0xf", reason: "CANCELLED", at: T0 },
  release: { type: "HOLD_DECIDED", decision: "RELEASE", note: null, at: T0 },
  refund: { type: "HOLD_DECIDED", decision: "REFUND", note: "listed", at: IN_GRACE },
  buyerDispute: { type: "DISPUTE_OPENED", txHash: "0xdi", openedBy: "0xbuyer", byBuyer: true, at: T0 },
} satisfies Record<string, OrderEvent>;

type Effect = { type: string; params: Record<string, unknown> };
type Snapshot = ReturnType<typeof initialTransition<typeof orderMachine>>[0];

function run(...events: OrderEvent[]): { snapshot: Snapshot; effects: Effect[] } {
  let [snapshot] = initialTransition(orderMachine, { orderId: "ord_test", expiresAt: DEPOSIT_DUE });
  let effects: Effect[] = [];
  for (const event of events) {
    const [next, actions] = transition(orderMachine, snapshot, event);
    snapshot = next;
    effects = actions.filter((action) => !action.type.startsWith("xstate.")) as Effect[];
  }
  return { snapshot, effects };
}
const sent = (effects: Effect[]) => effects.filter((effect) => effect.type === "sendTransaction").map((effect) => effect.params.action);
const timeline = (effects: Effect[]) => effects.filter((effect) => effect.type === "timeline").map((effect) => effect.params.event);

describe("a deposit after the order ended", () => {
  for (const [name, ending] of [["the deposit timer", ev.depositTimer], ["a cancellation", ev.cancel]] as const) {
    test(`after ${name}: refunded with cancel, the order stays EXPIRED`, () => {
      const { snapshot, effects } = run(ending, ev.deposit);
      assert.equal(snapshot.value, "EXPIRED");
      assert.equal(snapshot.status, "done");
      assert.deepEqual(sent(effects), ["cancel"]);
      assert.deepEqual(timeline(effects), ["LATE_DEPOSIT_REFUND_REQUESTED"]);
      assert.equal(snapshot.context.escrowTxHash, "0xd");
      const refunded = run(ending, ev.deposit, ev.refundedCancel);
      assert.equal(refunded.snapshot.value, "EXPIRED");
      assert.equal(refunded.snapshot.context.refundTxHash, "0xf");
      assert.deepEqual(timeline(refunded.effects), ["LATE_DEPOSIT_REFUNDED"]);
      assert.ok(!refunded.effects.some((effect) => effect.type === "notify"), "no webhook");
    });
  }

  test("asked once: a second deposit event or refund changes nothing", () => {
    assert.deepEqual(run(ev.depositTimer, ev.deposit, ev.deposit).effects, []);
    assert.deepEqual(run(ev.depositTimer, ev.deposit, ev.refundedCancel, ev.refundedCancel).effects, []);
  });
});

describe("a sanctions hold", () => {
  test("a listed buyer's lock holds the order; a verified payment sends no release", () => {
    const locked = run(ev.deposit, ev.sanctionedLock);
    assert.equal(locked.snapshot.context.sanctionsHold?.listEntry, "LISTED");
    assert.ok(timeline(locked.effects).includes("SANCTIONS_HOLD"));
    const verified = run(ev.deposit, ev.sanctionedLock, ev.report, ev.verified);
    assert.equal(verified.snapshot.value, "LOCKED");
    assert.deepEqual(sent(verified.effects), []);
    assert.deepEqual(timeline(verified.effects), ["PAYMENT_VERIFIED_HELD"]);
  });

  test("RELEASE sends the held release; the lock timer before it refunded nothing", () => {
    const timer = run(ev.deposit, ev.sanctionedLock, ev.report, ev.verified, ev.lockTimer);
    assert.deepEqual(sent(timer.effects), []);
    const released = run(ev.deposit, ev.sanctionedLock, ev.report, ev.verified, ev.release);
    assert.equal(released.snapshot.value, "PENDING_RELEASE");
    assert.deepEqual(sent(released.effects), ["confirmPayment"]);
  });

  test("REFUND after the lock expired asks for the refund at once, and only once", () => {
    const refund = run(ev.deposit, ev.sanctionedLock, ev.report, ev.verified, ev.lockTimer, ev.refund);
    assert.deepEqual(sent(refund.effects), ["refundExpiredLock"]);
    assert.deepEqual(run(ev.deposit, ev.sanctionedLock, ev.report, ev.verified, ev.lockTimer, ev.refund, ev.release).effects, []);
  });

  test("a held order with no payment is refunded by its lock timer as usual", () => {
    assert.deepEqual(sent(run(ev.deposit, ev.sanctionedLock, ev.lockTimer).effects), ["refundExpiredLock"]);
  });

  // A held buyer who disputes on chain must not be paid through the arbiter instead.
  for (const outcome of ["BUYER", "NO_FAULT_RELEASE"] as const) {
    const resolve = { type: "RESOLUTION_REQUESTED", outcome, note: null, at: T0 } satisfies OrderEvent;
    test(`a dispute resolved ${outcome} sends nothing while the hold is undecided or decided REFUND`, () => {
      const undecided = run(ev.deposit, ev.sanctionedLock, ev.buyerDispute, resolve);
      assert.equal(undecided.snapshot.value, "DISPUTED");
      assert.deepEqual(sent(undecided.effects), []);
      assert.deepEqual(timeline(undecided.effects), []);
      assert.equal(undecided.snapshot.context.resolutionRequest, null);
      const refundDecided = run(ev.deposit, ev.sanctionedLock, ev.refund, ev.buyerDispute, resolve);
      assert.deepEqual(sent(refundDecided.effects), []);
    });

    test(`a dispute resolved ${outcome} is sent once the operator decided RELEASE, and for a buyer who is not held`, () => {
      assert.deepEqual(sent(run(ev.deposit, ev.sanctionedLock, ev.release, ev.buyerDispute, resolve).effects), ["resolveDispute"]);
      assert.deepEqual(sent(run(ev.deposit, ev.lock, ev.buyerDispute, resolve).effects), ["resolveDispute"]);
    });
  }

  test("a held buyer's dispute can still be resolved for the seller, or retried", () => {
    for (const outcome of ["SELLER", "NO_FAULT_REFUND", "NO_FAULT_RETRY"] as const) {
      const resolved = run(ev.deposit, ev.sanctionedLock, ev.buyerDispute, { type: "RESOLUTION_REQUESTED", outcome, note: null, at: T0 });
      const sends = resolved.effects.filter((effect) => effect.type === "sendTransaction").map((effect) => effect.params);
      assert.deepEqual(JSON.parse(JSON.stringify(sends)), [{ action: "resolveDispute", params: { outcome } }]);
    }
  });
});

describe("the refund grace period", () => {
  test("the lock timer waits for a report of an in-window payment being verified, and sets the grace timer", () => {
    const { snapshot, effects } = run(ev.deposit, ev.lock, ev.report, ev.lockTimer);
    assert.deepEqual(sent(effects), []);
    assert.deepEqual(timeline(effects), ["LOCK_EXPIRY_REFUND_DEFERRED"]);
    assert.ok(effects.some((effect) => effect.type === "startTimer" && effect.params.timer === "REFUND_GRACE_TIMEOUT" && effect.params.dueAt === GRACE_DUE));
    assert.equal(snapshot.context.lockRefundDeferred, true);
  });

  test("a report of a payment outside the window does not hold the refund", () => {
    assert.deepEqual(sent(run(ev.deposit, ev.lock, ev.reportOutsideWindow, ev.lockTimer).effects), ["refundExpiredLock"]);
  });

  test("a payment verified in the grace period is released", () => {
    const { snapshot, effects } = run(ev.deposit, ev.lock, ev.report, ev.lockTimer, ev.verifiedInGrace);
    assert.equal(snapshot.value, "PENDING_RELEASE");
    assert.deepEqual(sent(effects), ["confirmPayment"]);
    assert.equal(run(ev.deposit, ev.lock, ev.report, ev.lockTimer, ev.verifiedAfterGrace).snapshot.value, "LOCKED");
  });

  test("the rejection of the awaited report asks for the refund", () => {
    assert.deepEqual(sent(run(ev.deposit, ev.lock, ev.report, ev.lockTimer, ev.rejectedInGrace).effects), ["refundExpiredLock"]);
  });

  test("the grace's end asks for the refund, once", () => {
    assert.deepEqual(sent(run(ev.deposit, ev.lock, ev.report, ev.lockTimer, ev.graceTimer).effects), ["refundExpiredLock"]);
    assert.deepEqual(run(ev.deposit, ev.lock, ev.report, ev.lockTimer, ev.graceTimer, ev.rejectedInGrace).effects.filter((effect) => effect.type === "sendTransaction"), []);
  });

  test("once the refund was asked for, a late verification does not race it", () => {
    assert.equal(run(ev.deposit, ev.lock, ev.lockTimer, ev.report, ev.verifiedInGrace).snapshot.value, "LOCKED");
  });

  test("snapshots without a grace (locked before it) keep refusing a verification after expiry", () => {
    const { type: _type, refundGraceSeconds: _grace, ...rest } = ev.lock;
    const oldLock = { type: "LOCKED" as const, ...rest };
    assert.equal(run(ev.deposit, oldLock, ev.report, { ...ev.verified, at: IN_GRACE }).snapshot.value, "LOCKED");
  });
});

describe("a pause moves the lock's expiry", () => {
  const MOVED = "2026-11-21T16:10:00.000Z";
  const moved = { type: "LOCK_EXPIRY_MOVED", dueAt: LOCK_DUE, lockExpiresAt: MOVED, at: LOCK_DUE } as const;

  test("the order's expiry follows the chain and a new lock timer is set; the old timer does nothing", () => {
    const { snapshot, effects } = run(ev.deposit, ev.lock, moved);
    assert.equal(snapshot.context.lockExpiresAt, MOVED);
    assert.ok(effects.some((effect) => effect.type === "startTimer" && effect.params.timer === "LOCK_TIMEOUT" && effect.params.dueAt === MOVED));
    assert.deepEqual(run(ev.deposit, ev.lock, moved, ev.lockTimer).effects, []);
    assert.deepEqual(sent(run(ev.deposit, ev.lock, moved, { ...ev.lockTimer, dueAt: MOVED, at: MOVED }).effects), ["refundExpiredLock"]);
  });

  test("a stale or backwards move changes nothing", () => {
    assert.deepEqual(run(ev.deposit, ev.lock, { ...moved, dueAt: "2026-11-21T15:00:00.000Z" }).effects, []);
    assert.deepEqual(run(ev.deposit, ev.lock, { ...moved, lockExpiresAt: "2026-11-21T15:00:00.000Z" }).effects, []);
  });
});
