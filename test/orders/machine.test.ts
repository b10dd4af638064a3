import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { initialTransition, transition } from "xstate";
import { initialOrderTransition, ORDER_STATUSES, orderMachine, transitionOrder, type OrderEvent, type OrderStatus, type ReplaceableTxHash } from "../../src/orders/machine.ts";

// The spec's status chart, checked on the pure machine: every transition drawn in it (plus the chain
// races documented in docs/orders.md), and every event refused in every other state.

const T0 = "2026-11-21T10:00:00.000Z";
const DEPOSIT_DUE = "2026-11-21T10:30:00.000Z";
const LISTING_DUE = "2026-11-22T10:00:00.000Z";
const LOCK_DUE = "2026-11-22T11:00:00.000Z";
const NEW_LOCK_DUE = "2026-11-23T11:00:00.000Z";
const payment = { cepTrackingKey: "MBAN01002611210001", operationDate: "2026-11-21", senderBankCode: "40012" };

const ev = {
  deposit: { type: "DEPOSIT_CONFIRMED", txHash: "0xd", seller: "0xseller", listingExpiresAt: LISTING_DUE, at: T0 },
  lock: { type: "LOCKED", txHash: "0xl", buyer: "0xbuyer", lockExpiresAt: LOCK_DUE, at: T0 },
  depositTimer: { type: "TIMER_FIRED", timer: "DEPOSIT_TIMEOUT", dueAt: DEPOSIT_DUE, at: DEPOSIT_DUE },
  listingTimer: { type: "TIMER_FIRED", timer: "LISTING_TIMEOUT", dueAt: LISTING_DUE, at: LISTING_DUE },
  lockTimer: { type: "TIMER_FIRED", timer: "LOCK_TIMEOUT", dueAt: LOCK_DUE, at: LOCK_DUE },
  cancel: { type: "CANCEL", at: T0 },
  report: { type: "PAYMENT_REPORTED", ...payment, amountMxn: "1725.00", at: T0 },
  verified: { type: "PAYMENT_VERIFIED", ...payment, cepHash: "0xcep", amountMxn: "1725.00", paidAt: T0, at: T0 },
  rejected: { type: "PAYMENT_REJECTED", ...payment, reason: "AMOUNT_TOO_LOW", message: "short", at: T0 },
  released: { type: "RELEASED", txHash: "0xr", at: T0 },
  refundedListing: { type: "REFUNDED", txHash: "0xf", reason: "LISTING_EXPIRED", at: T0 },
  refundedCancel: { type: "REFUNDED", txHash: "0xf", reason: "CANCELLED", at: T0 },
  refundedLock: { type: "REFUNDED", txHash: "0xf", reason: "LOCK_EXPIRED", at: T0 },
  refundedDispute: { type: "REFUNDED", txHash: "0xf", reason: "DISPUTE", at: T0 },
  disputeByBuyer: { type: "DISPUTE_OPENED", txHash: "0xo", openedBy: "0xbuyer", byBuyer: true, at: T0 },
  resolve: (outcome: "BUYER" | "SELLER" | "NO_FAULT_RELEASE" | "NO_FAULT_REFUND" | "NO_FAULT_RETRY") =>
    ({ type: "DISPUTE_RESOLVED", txHash: "0xs", outcome, newLockExpiresAt: outcome === "NO_FAULT_RETRY" ? NEW_LOCK_DUE : null, at: T0 }) as const,
  request: (outcome: "BUYER" | "SELLER") => ({ type: "RESOLUTION_REQUESTED", outcome, note: null, at: T0 }) as const,
} satisfies Record<string, OrderEvent | ((...args: never[]) => OrderEvent)>;

type Snapshot = ReturnType<typeof initialTransition<typeof orderMachine>>[0];

/** The order after `events`, and the effects of the last, through the service's own calls (store.ts). */
function run(...events: OrderEvent[]): { snapshot: Snapshot; effects: { type: string; params: Record<string, unknown> }[] } {
  let [snapshot] = initialOrderTransition({ orderId: "ord_test", expiresAt: DEPOSIT_DUE });
  let effects: { type: string; params: Record<string, unknown> }[] = [];
  for (const event of events) {
    const [next, actions] = transitionOrder(snapshot, event);
    snapshot = next;
    effects = actions.filter((action) => !action.type.startsWith("xstate.")) as typeof effects;
  }
  return { snapshot, effects };
}

const notified = (effects: { type: string; params: Record<string, unknown> }[]) =>
  effects.filter((effect) => effect.type === "notify").map((effect) => effect.params.eventType);
const sent = (effects: { type: string; params: Record<string, unknown> }[]) =>
  effects.filter((effect) => effect.type === "sendTransaction").map((effect) => effect.params.action);

/** Paths to each state from creation. */
const reach: Record<Exclude<OrderStatus, "COMPLETED" | "EXPIRED" | "REFUNDED">, OrderEvent[]> = {
  PENDING_DEPOSIT: [],
  ACTIVE: [ev.deposit],
  LOCKED: [ev.deposit, ev.lock],
  PENDING_RELEASE: [ev.deposit, ev.lock, ev.report, ev.verified],
  DISPUTED: [ev.deposit, ev.lock, ev.disputeByBuyer],
};

describe("the order machine mirrors the status chart", () => {
  test("has the spec's eight statuses, COMPLETED, EXPIRED and REFUNDED final", () => {
    assert.deepEqual(Object.keys(orderMachine.states).sort(), [...ORDER_STATUSES].sort());
    const finals = Object.entries(orderMachine.states).filter(([, node]) => node.type === "final").map(([name]) => name).sort();
    assert.deepEqual(finals, ["COMPLETED", "EXPIRED", "REFUNDED"]);
  });

  test("creation: PENDING_DEPOSIT with order.created and the deposit timer", () => {
    const [snapshot, actions] = initialTransition(orderMachine, { orderId: "ord_test", expiresAt: DEPOSIT_DUE });
    assert.equal(snapshot.value, "PENDING_DEPOSIT");
    assert.deepEqual(notified(actions as never), ["order.created"]);
    assert.ok(actions.some((action) => action.type === "startTimer" && (action.params as { timer: string }).timer === "DEPOSIT_TIMEOUT"));
  });

  const cases: [string, OrderEvent[], OrderStatus, string[], string[]][] = [
    ["PENDING_DEPOSIT, deposit confirmed -> ACTIVE", [ev.deposit], "ACTIVE", ["order.deposit_confirmed"], []],
    ["PENDING_DEPOSIT, deposit timeout -> EXPIRED", [ev.depositTimer], "EXPIRED", ["order.expired"], []],
    ["PENDING_DEPOSIT, cancel -> EXPIRED", [ev.cancel], "EXPIRED", ["order.expired"], []],
    ["ACTIVE, buyer locks -> LOCKED", [ev.deposit, ev.lock], "LOCKED", ["order.locked"], []],
    ["ACTIVE, listing timeout asks for the refund", [ev.deposit, ev.listingTimer], "ACTIVE", [], ["expireListing"]],
    ["ACTIVE, listing refund seen -> EXPIRED", [ev.deposit, ev.listingTimer, ev.refundedListing], "EXPIRED", ["order.expired"], []],
    ["ACTIVE, cancel asks for the refund", [ev.deposit, ev.cancel], "ACTIVE", [], ["cancel"]],
    ["ACTIVE, cancellation refund seen -> REFUNDED", [ev.deposit, ev.cancel, ev.refundedCancel], "REFUNDED", ["order.refunded"], []],
    ["LOCKED, payment reported starts verification", [...reach.LOCKED, ev.report], "LOCKED", [], []],
    ["LOCKED, CEP verified -> PENDING_RELEASE and the release is sent", reach.PENDING_RELEASE, "PENDING_RELEASE", ["order.payment_verified"], ["confirmPayment"]],
    ["LOCKED, CEP rejected stays LOCKED", [...reach.LOCKED, ev.report, ev.rejected], "LOCKED", [], []],
    ["LOCKED, lock timer asks for the refund", [...reach.LOCKED, ev.lockTimer], "LOCKED", [], ["refundExpiredLock"]],
    ["LOCKED, lock refund seen -> REFUNDED", [...reach.LOCKED, ev.lockTimer, ev.refundedLock], "REFUNDED", ["order.lock_expired", "order.refunded"], []],
    ["LOCKED, dispute opened -> DISPUTED", reach.DISPUTED, "DISPUTED", ["order.disputed"], []],
    ["PENDING_RELEASE, release confirmed -> COMPLETED", [...reach.PENDING_RELEASE, ev.released], "COMPLETED", ["order.completed"], []],
    ["PENDING_RELEASE, dispute mined first -> DISPUTED", [...reach.PENDING_RELEASE, ev.disputeByBuyer], "DISPUTED", ["order.disputed"], []],
    ["PENDING_RELEASE, lock refund mined first -> REFUNDED", [...reach.PENDING_RELEASE, ev.refundedLock], "REFUNDED", ["order.lock_expired", "order.refunded"], []],
    ["DISPUTED, operator's resolution asks the arbiter once", [...reach.DISPUTED, ev.request("BUYER")], "DISPUTED", [], ["resolveDispute"]],
    ["DISPUTED, resolved for buyer -> COMPLETED", [...reach.DISPUTED, ev.resolve("BUYER"), ev.released], "COMPLETED", ["order.dispute_resolved"], []],
    ["DISPUTED, no-fault release -> COMPLETED", [...reach.DISPUTED, ev.resolve("NO_FAULT_RELEASE"), ev.released], "COMPLETED", ["order.dispute_resolved"], []],
    ["DISPUTED, resolved for seller -> REFUNDED", [...reach.DISPUTED, ev.resolve("SELLER"), ev.refundedDispute], "REFUNDED", ["order.dispute_resolved", "order.refunded"], []],
    ["DISPUTED, no-fault refund -> REFUNDED", [...reach.DISPUTED, ev.resolve("NO_FAULT_REFUND"), ev.refundedDispute], "REFUNDED", ["order.dispute_resolved", "order.refunded"], []],
    ["DISPUTED, no-fault retry -> LOCKED with a new timer", [...reach.DISPUTED, ev.resolve("NO_FAULT_RETRY")], "LOCKED", ["order.dispute_resolved"], []],
  ];
  for (const [name, events, status, events_, transactions] of cases) {
    test(name, () => {
      const { snapshot, effects } = run(...events);
      assert.equal(snapshot.value, status);
      assert.deepEqual(notified(effects), events_);
      assert.deepEqual(sent(effects), transactions);
    });
  }

  test("a no-fault retry sets the new lock window and its timer", () => {
    const { snapshot, effects } = run(...reach.DISPUTED, ev.resolve("NO_FAULT_RETRY"));
    assert.equal(snapshot.context.lockExpiresAt, NEW_LOCK_DUE);
    assert.ok(effects.some((effect) => effect.type === "startTimer" && effect.params.dueAt === NEW_LOCK_DUE));
    // The old lock's timer no longer does anything; the new one does.
    assert.equal(run(...reach.DISPUTED, ev.resolve("NO_FAULT_RETRY"), ev.lockTimer).effects.length, 0);
    const { effects: fired } = run(...reach.DISPUTED, ev.resolve("NO_FAULT_RETRY"), { ...ev.lockTimer, dueAt: NEW_LOCK_DUE });
    assert.deepEqual(sent(fired), ["refundExpiredLock"]);
  });
});

describe("a timer made moot by a transition is cancelled in it", () => {
  const cancelled = (effects: { type: string; params: Record<string, unknown> }[]) =>
    effects.filter((effect) => effect.type === "cancelTimer").map((effect) => [effect.params.timer, effect.params.dueAt]);

  test("the deposit confirmed cancels the deposit timer, due at the order's first expiry", () => {
    assert.deepEqual(cancelled(run(ev.deposit).effects), [["DEPOSIT_TIMEOUT", DEPOSIT_DUE]]);
  });

  test("the lock cancels the listing timer", () => {
    assert.deepEqual(cancelled(run(ev.deposit, ev.lock).effects), [["LISTING_TIMEOUT", LISTING_DUE]]);
  });

  test("leaving LOCKED cancels the lock timer: verified, disputed or refunded", () => {
    assert.deepEqual(cancelled(run(...reach.PENDING_RELEASE).effects), [["LOCK_TIMEOUT", LOCK_DUE]]);
    assert.deepEqual(cancelled(run(...reach.DISPUTED).effects), [["LOCK_TIMEOUT", LOCK_DUE]]);
  });

  test("a deferred refund's grace timer is cancelled with the lock timer when the order leaves LOCKED", () => {
    const GRACE_S = 600;
    const lock = { ...ev.lock, refundGraceSeconds: GRACE_S, at: T0 };
    const late = { ...ev.verified, at: "2026-11-22T11:01:00.000Z" };
    // The lock timer fired while an in-window report was being verified: the refund waits for the grace timer.
    const { snapshot, effects } = run(ev.deposit, lock, ev.report, ev.lockTimer, late);
    assert.equal(snapshot.value, "PENDING_RELEASE");
    assert.deepEqual(cancelled(effects), [["REFUND_GRACE_TIMEOUT", new Date(Date.parse(LOCK_DUE) + GRACE_S * 1000).toISOString()]]);
  });

  test("a timer already due is not cancelled: the one firing, or one that fires into a state that ignores it", () => {
    assert.deepEqual(cancelled(run(ev.depositTimer).effects), []);
    assert.deepEqual(cancelled(run(ev.deposit, { ...ev.lock, at: LISTING_DUE }).effects), []);
  });

  test("a retried dispute's new lock timer is cancelled, not the old one, when the order leaves LOCKED again", () => {
    const { effects } = run(...reach.DISPUTED, ev.resolve("NO_FAULT_RETRY"), ev.disputeByBuyer);
    assert.deepEqual(cancelled(effects), [["LOCK_TIMEOUT", NEW_LOCK_DUE]]);
  });

  test("a transition within a state cancels nothing", () => {
    assert.deepEqual(cancelled(run(ev.deposit, ev.cancel).effects), []);
    assert.deepEqual(cancelled(run(...reach.LOCKED, ev.report).effects), []);
  });
});

test("the service's transitions, through one inert scope, equal XState's own transition functions, step by step", () => {
  const steps = (snapshot: Snapshot, actions: { type: string; params?: unknown }[]) => ({
    value: snapshot.value,
    context: snapshot.context,
    status: snapshot.status,
    actions: actions.map(({ type, params }) => ({ type, params })),
  });
  const input = { orderId: "ord_test", expiresAt: DEPOSIT_DUE };
  let ours = initialOrderTransition(input);
  let xstates = initialTransition(orderMachine, input);
  assert.deepEqual(steps(...ours), steps(...xstates));
  for (const event of [ev.deposit, ev.lock, ev.report, ev.rejected, ev.report, ev.disputeByBuyer, ev.request("BUYER"), ev.resolve("NO_FAULT_RETRY"), ev.report, ev.verified, ev.released] as OrderEvent[]) {
    ours = transitionOrder(ours[0], event);
    xstates = transition(orderMachine, xstates[0], event);
    assert.deepEqual(steps(...ours), steps(...xstates), event.type);
    assert.ok(ours[1].length > 0, `${event.type} did something`);
  }
  assert.equal(ours[0].value, "COMPLETED");
});

describe("the order machine refuses what the chart does not allow", () => {
  const everyEvent: [string, OrderEvent][] = [
    ["deposit confirmed", ev.deposit],
    ["lock", ev.lock],
    ["deposit timer", ev.depositTimer],
    ["listing timer", ev.listingTimer],
    ["lock timer", ev.lockTimer],
    ["cancel", ev.cancel],
    ["payment reported", ev.report],
    ["payment verified", ev.verified],
    ["payment rejected", ev.rejected],
    ["released", ev.released],
    ["refunded (listing)", ev.refundedListing],
    ["refunded (cancel)", ev.refundedCancel],
    ["refunded (lock)", ev.refundedLock],
    ["refunded (dispute)", ev.refundedDispute],
    ["dispute opened", ev.disputeByBuyer],
    ["dispute resolved", ev.resolve("BUYER")],
    ["resolution requested", ev.request("SELLER")],
  ];
  /** What each state accepts (any change of value, context or effects); everything else is refused. */
  const accepted: Record<keyof typeof reach, string[]> = {
    PENDING_DEPOSIT: ["deposit confirmed", "deposit timer", "cancel"],
    ACTIVE: ["lock", "listing timer", "cancel", "refunded (listing)", "refunded (cancel)"],
    LOCKED: ["payment reported", "lock timer", "refunded (lock)", "dispute opened"],
    PENDING_RELEASE: ["released", "refunded (lock)", "dispute opened"],
    DISPUTED: ["dispute resolved", "resolution requested"],
  };
  for (const [state, path] of Object.entries(reach) as [keyof typeof reach, OrderEvent[]][]) {
    for (const [name, event] of everyEvent) {
      if (accepted[state].includes(name)) continue;
      test(`${state} ignores ${name}`, () => {
        const before = run(...path).snapshot;
        const [after, actions] = transition(orderMachine, before, event);
        assert.equal(after.value, before.value);
        assert.deepEqual(after.context, before.context);
        assert.equal(actions.filter((action) => !action.type.startsWith("xstate.")).length, 0);
      });
    }
  }

  for (const [name, path] of [
    ["COMPLETED", [...reach.PENDING_RELEASE, ev.released]],
    ["EXPIRED", [ev.depositTimer]],
    ["REFUNDED", [ev.deposit, ev.cancel, ev.refundedCancel]],
  ] as const) {
    test(`${name} is final: no event moves it`, () => {
      const final = run(...path).snapshot;
      assert.equal(final.status, "done");
      for (const [, event] of everyEvent) assert.equal(transition(orderMachine, final, event)[0].value, name);
    });
  }

  test("a verdict for a payment nobody reported changes nothing", () => {
    const locked = run(...reach.LOCKED).snapshot;
    assert.equal(transition(orderMachine, locked, ev.verified)[0].value, "LOCKED");
  });

  test("a CEP verified after the lock expired does not release", () => {
    const reported = run(...reach.LOCKED, ev.report).snapshot;
    assert.equal(transition(orderMachine, reported, { ...ev.verified, at: "2026-11-22T11:00:01.000Z" })[0].value, "LOCKED");
  });

  test("a second resolution request while one is pending sends nothing more", () => {
    const requested = run(...reach.DISPUTED, ev.request("BUYER")).snapshot;
    const [, actions] = transition(orderMachine, requested, ev.request("BUYER"));
    assert.deepEqual(sent(actions as never), []);
  });
});

describe("completion time", () => {
  test("a release stamped with its block's whole second never completes before the payment was verified", () => {
    const verifiedAt = "2026-11-21T10:00:05.400Z";
    const { snapshot, effects } = run(ev.deposit, ev.lock, ev.report, { ...ev.verified, at: verifiedAt }, { ...ev.released, at: "2026-11-21T10:00:05.000Z" });
    assert.equal(snapshot.context.completedAt, verifiedAt);
    const completed = effects.find((effect) => effect.type === "notify")?.params.data as { completedAt?: string } | undefined;
    assert.equal(completed?.completedAt, verifiedAt, "order.completed says the same");
    const later = run(ev.deposit, ev.lock, ev.report, { ...ev.verified, at: verifiedAt }, { ...ev.released, at: "2026-11-21T10:00:07.000Z" });
    assert.equal(later.snapshot.context.completedAt, "2026-11-21T10:00:07.000Z");
  });
});

describe("a transaction a deep reorganisation replaced (decisions 6, 7)", () => {
  function replaced(field: ReplaceableTxHash, orphanedTxHash: string): OrderEvent {
    return { type: "CHAIN_TX_REPLACED", field, orphanedTxHash, txHash: "0xnew", at: T0 };
  }

  test("a final order records the refund's new hash, with a timeline entry, and stays where it is", () => {
    const refunded = run(ev.deposit, ev.cancel, ev.refundedCancel).snapshot;
    const [after, actions] = transition(orderMachine, refunded, replaced("refundTxHash", "0xf"));
    assert.equal(after.value, "REFUNDED");
    assert.equal(after.context.refundTxHash, "0xnew");
    const effects = actions.filter((action) => !action.type.startsWith("xstate.")).map(({ type, params }) => ({ type, params }));
    assert.deepEqual(effects, [{ type: "timeline", params: { event: "CHAIN_TX_REPLACED", data: { field: "refundTxHash", orphanedTxHash: "0xf", txHash: "0xnew" } } }]);
  });

  test("an open order records its deposit's new hash", () => {
    const [after] = transition(orderMachine, run(ev.deposit, ev.lock).snapshot, replaced("escrowTxHash", "0xd"));
    assert.equal(after.value, "LOCKED");
    assert.equal(after.context.escrowTxHash, "0xnew");
  });

  test("a hash the order does not record as the removed one is kept", () => {
    const completed = run(...reach.PENDING_RELEASE, ev.released).snapshot;
    const [after, actions] = transition(orderMachine, completed, replaced("releaseTxHash", "0xother"));
    assert.equal(after.context.releaseTxHash, "0xr");
    assert.equal(actions.filter((action) => !action.type.startsWith("xstate.")).length, 0);
  });
});
