// Decisions 8: the CEP's ordering party compared with the buyer's verified identity (pure rules of
// src/domain/payer-identity.ts), and the order machine's third-party hold (src/orders/machine.ts).
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { initialTransition, transition } from "xstate";
import { comparePayer, isCurp, isRfc, normaliseName, syntheticIdentity } from "../../src/domain/payer-identity.ts";
import { createLogger } from "../../src/logger.ts";
import { orderMachine, type OrderEvent, type ThirdPartyPayment } from "../../src/orders/machine.ts";

const buyer = { name: "José Pérez Núñez", curp: "PENJ800101HDFRXS09", rfc: "PENJ800101AB1" };

describe("comparing the payer with the buyer", () => {
  test("names that differ only by accents, letter case, spaces, punctuation or word order match", () => {
    for (const name of ["JOSE PEREZ NUNEZ", "jose  perez nuñez", "Pérez Núñez, José", "NUNEZ PEREZ JOSE", " José  Pérez-Núñez. "]) {
      assert.deepEqual(comparePayer({ ...buyer, curp: null, rfc: null }, { name, rfcOrCurp: "ND" }), { match: true, by: "NAME" }, name);
    }
    assert.equal(normaliseName("Pérez Núñez, José"), "JOSE NUNEZ PEREZ");
  });

  test("another name does not match, nor a name with a word more or less", () => {
    for (const name of ["MARIA PEREZ NUNEZ", "JOSE PEREZ", "JOSE PEREZ NUNEZ GARCIA"]) {
      assert.deepEqual(comparePayer({ ...buyer, curp: null, rfc: null }, { name, rfcOrCurp: "ND" }), { match: false, by: "NAME" }, name);
    }
  });

  test("the RFC beats the name: the buyer's RFC under another name matches, another RFC under the buyer's name does not", () => {
    assert.deepEqual(comparePayer(buyer, { name: "ALGUIEN MAS", rfcOrCurp: "penj800101ab1" }), { match: true, by: "RFC" });
    assert.deepEqual(comparePayer(buyer, { name: "JOSE PEREZ NUNEZ", rfcOrCurp: "GAHM750505XY2" }), { match: false, by: "RFC" });
  });

  test("a CURP in the CEP's RFC field is compared with the buyer's CURP", () => {
    assert.deepEqual(comparePayer(buyer, { name: "OTRO", rfcOrCurp: buyer.curp }), { match: true, by: "CURP" });
    assert.deepEqual(comparePayer(buyer, { name: buyer.name, rfcOrCurp: "GAHM750505MDFRRR01" }), { match: false, by: "CURP" });
  });

  test("without an identity number on both sides the name decides; a buyer with none on record never matches", () => {
    assert.deepEqual(comparePayer({ ...buyer, rfc: null, curp: null }, { name: buyer.name, rfcOrCurp: "GAHM750505XY2" }), { match: true, by: "NAME" });
    assert.deepEqual(comparePayer({ name: null, curp: null, rfc: null }, { name: "JOSE PEREZ NUNEZ", rfcOrCurp: "ND" }), { match: false, by: "NO_VERIFIED_IDENTITY" });
  });

  test("generated sandbox identities are well formed and stable", () => {
    const one = syntheticIdentity("0xabc");
    assert.deepEqual(syntheticIdentity("0xabc"), one);
    assert.ok(isCurp(one.curp), one.curp);
    assert.ok(isRfc(one.rfc), one.rfc);
    assert.equal(one.curp.slice(0, 10), one.rfc.slice(0, 10));
    assert.notEqual(syntheticIdentity("0xabd").rfc, one.rfc);
  });
});

test("identities never reach the logs: the buyer's verified identity, a decision's, a payer's", () => {
  const chunks: string[] = [];
  const logger = createLogger("trace", new Writable({ write: (chunk: Buffer, _encoding, done) => (chunks.push(chunk.toString()), done()) }));
  logger.info({ identity: buyer }, "KYC decision");
  logger.info({ buyer: { verifiedName: buyer.name, curp: buyer.curp, rfc: buyer.rfc } }, "buyer");
  logger.info({ receipt: { senderName: "MARIA GOMEZ", senderRfc: "GOMM800101AB1" } }, "CEP");
  logger.info({ hold: { payer: { name: "MARIA GOMEZ", rfcOrCurp: "GOMM800101AB1" } } }, "held");
  const text = chunks.join("");
  for (const value of ["Pérez", "PENJ800101", "MARIA GOMEZ", "GOMM800101AB1"]) assert.ok(!text.includes(value), `${value} logged`);
});

const T0 = "2026-11-21T10:00:00.000Z";
const LOCK_DUE = "2026-11-21T16:00:00.000Z";
const IN_GRACE = "2026-11-21T16:30:00.000Z";
const GRACE_DUE = "2026-11-21T17:00:00.000Z";
const payment = { cepTrackingKey: "MBAN01002611210001", operationDate: "2026-11-21", senderBankCode: "40012" };
const thirdParty: ThirdPartyPayment = {
  payer: { name: "MARIA GOMEZ", rfcOrCurp: "GOMM800101AB1", account: "646180157000000004", bank: "STP" },
  buyer: { wallet: "0xbuyer", ...buyer },
  comparedBy: "RFC",
};
const ev = {
  deposit: { type: "DEPOSIT_CONFIRMED", txHash: "0xd", seller: "0xseller", listingExpiresAt: "2026-11-22T10:00:00.000Z", at: T0 },
  lock: { type: "LOCKED", txHash: "0xl", buyer: "0xbuyer", lockExpiresAt: LOCK_DUE, at: T0, refundGraceSeconds: 3600 },
  report: { type: "PAYMENT_REPORTED", ...payment, amountMxn: "1725.00", at: T0 },
  heldPayment: { type: "PAYMENT_VERIFIED", ...payment, cepHash: "0xcep", amountMxn: "1725.00", paidAt: T0, at: T0, thirdParty },
  lockTimer: { type: "TIMER_FIRED", timer: "LOCK_TIMEOUT", dueAt: LOCK_DUE, at: LOCK_DUE },
  graceTimer: { type: "TIMER_FIRED", timer: "REFUND_GRACE_TIMEOUT", dueAt: GRACE_DUE, at: GRACE_DUE },
  releaseInGrace: { type: "HOLD_DECIDED", decision: "RELEASE", note: "own second account", at: IN_GRACE },
  releaseAfterGrace: { type: "HOLD_DECIDED", decision: "RELEASE", note: null, at: GRACE_DUE },
  refundAfterGrace: { type: "HOLD_DECIDED", decision: "REFUND", note: "stranger", at: GRACE_DUE },
  secondReport: { type: "PAYMENT_REPORTED", ...payment, cepTrackingKey: "OTHER0001", amountMxn: "1725.00", at: T0 },
} satisfies Record<string, OrderEvent>;

type Effect = { type: string; params: Record<string, unknown> };
function run(...events: OrderEvent[]) {
  let [snapshot] = initialTransition(orderMachine, { orderId: "ord_test", expiresAt: "2026-11-21T10:30:00.000Z" });
  let effects: Effect[] = [];
  let changed = true;
  for (const event of events) {
    const [next, actions] = transition(orderMachine, snapshot, event);
    changed = next !== snapshot && JSON.stringify(next.context) !== JSON.stringify(snapshot.context);
    snapshot = next;
    effects = actions.filter((action) => !action.type.startsWith("xstate.")) as Effect[];
  }
  return { snapshot, effects, changed };
}
const sent = (effects: Effect[]) => effects.filter((effect) => effect.type === "sendTransaction").map((effect) => effect.params.action);
const timeline = (effects: Effect[]) => effects.filter((effect) => effect.type === "timeline").map((effect) => effect.params);

describe("the order machine's third-party hold", () => {
  test("a payment from another account is recorded and its CEP kept, no release is sent, and the timeline names no one", () => {
    const { snapshot, effects } = run(ev.deposit, ev.lock, ev.report, ev.heldPayment);
    assert.equal(snapshot.value, "LOCKED");
    assert.equal(snapshot.context.cepHash, "0xcep");
    assert.equal(snapshot.context.thirdPartyHold?.payer.name, "MARIA GOMEZ");
    assert.deepEqual(sent(effects), []);
    assert.deepEqual(timeline(effects), [
      { event: "THIRD_PARTY_PAYMENT", data: { cepTrackingKey: payment.cepTrackingKey, amountMxn: "1725.00", paidAt: T0, reason: "third-party payment" } },
    ]);
    assert.ok(!JSON.stringify(effects.map((effect) => effect.params)).includes("MARIA"), "no payer identity in any effect (timeline, webhook)");
  });

  test("no other payment report is taken while held", () => {
    const { changed } = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.secondReport);
    assert.equal(changed, false);
  });

  test("the lock timer does not refund it; the operator's RELEASE inside the grace sends the release", () => {
    const expired = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.lockTimer);
    assert.deepEqual(sent(expired.effects), []);
    assert.deepEqual(timeline(expired.effects).map((entry) => [entry.event, (entry.data as { reason: string }).reason]), [["LOCK_EXPIRY_REFUND_HELD", "THIRD_PARTY_PAYMENT"]]);
    const released = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.lockTimer, ev.releaseInGrace);
    assert.equal(released.snapshot.value, "PENDING_RELEASE");
    assert.deepEqual(sent(released.effects), ["confirmPayment"]);
    assert.equal(released.snapshot.context.thirdPartyHold?.decision, "RELEASE");
  });

  test("the grace timer does not refund it either: the operator decides", () => {
    const { effects, snapshot } = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.lockTimer, ev.graceTimer);
    assert.deepEqual(sent(effects), []);
    assert.equal(snapshot.value, "LOCKED");
  });

  test("after the lock's expiry + the grace, RELEASE is refused (the escrow would revert it) and REFUND refunds the seller", () => {
    const late = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.lockTimer, ev.releaseAfterGrace);
    assert.equal(late.changed, false);
    assert.equal(late.snapshot.context.thirdPartyHold?.decision, null);
    const refunded = run(ev.deposit, ev.lock, ev.report, ev.heldPayment, ev.lockTimer, ev.refundAfterGrace);
    assert.deepEqual(sent(refunded.effects), ["refundExpiredLock"]);
    assert.equal(refunded.snapshot.context.cepHash, "0xcep", "the CEP stays used");
  });
});
