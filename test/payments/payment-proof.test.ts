// Decisions 8 and 13: the buyer's signed payment report, the CEP the service fetches itself from the
// central bank's portal (the sandbox simulator, behind a forwarder that records each query), the
// checks, the portal's answers, a reused CEP. Real chain, indexer and PostgreSQL.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { withCheckDigit } from "../../src/domain/clabe.ts";
import type { CepPortalSimulator } from "../../src/sandbox/simulators/cep-portal.ts";
import { syntheticIdentity } from "../../src/domain/payer-identity.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { startCepPortalProxy, type CepPortalProxy } from "./support/cep-portal-proxy.ts";
import {
  lockedOrder,
  mexicoCityDate,
  orderDetail,
  placeOrder,
  report,
  sandbox,
  signedReport,
  waitForVerified,
  waitForTimeline,
  type Json,
  type OrderDetail,
} from "./support/payments.ts";

const BUYER = 1; // sandbox wallet that locks by default
const STRANGER = 3;
/** A valid CLABE at another bank (Banorte) than the test seller's (BBVA). */
const OTHER_CLABE = withCheckDigit("07218000118359719");
const NOT_FOUND_WAIT_MS = 150_000;

let stack: TradeStack;
let proxy: CepPortalProxy;
let portal: CepPortalSimulator;
before(async () => {
  proxy = await startCepPortalProxy();
  stack = await startTradeStack({ CEP_URL: proxy.url });
  proxy.target = `${stack.service.baseUrl}/simulators/cep`;
  portal = stack.service.simulators!.cep;
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

type PayResult = Json & { trackingKey: string; operationDate: string; senderBankCode: string; payment: Json };

const pay = (order: OrderDetail, body: Json = {}) => sandbox<PayResult>(stack, order.id, "pay", body);

/** The ordering party of the buyer's own account (decisions 8): the sandbox wallet's generated verified identity. */
const ownAccount = (() => {
  const identity = syntheticIdentity(sandboxAccounts[BUYER]!.address.toLowerCase());
  return { senderName: identity.name, senderRfc: identity.rfc };
})();

/** A SPEI payment recorded in the portal simulator, as the buyer's bank would make it: from the buyer's own account to the seller, now. */
function recordPayment(order: OrderDetail, overrides: { trackingKey?: string; amountMxn?: string; beneficiaryAccount?: string; receiverBankCode?: string } = {}) {
  return portal.recordPayment({
    operationAt: new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))),
    amountMxn: order.totalMxn.toFixed(2),
    beneficiaryAccount: overrides.beneficiaryAccount ?? String((order.bankAccount as Json).clabe),
    receiverBankCode: overrides.receiverBankCode ?? "40012",
    senderBankCode: "40002",
    ...ownAccount,
    concept: `PAGO ${String(order.paymentConcept)}`,
    ...overrides,
  });
}

async function rejection(order: OrderDetail, trackingKey: string, timeoutMs = 30_000) {
  const entry = await waitForTimeline(stack, order.id, "PAYMENT_REJECTED", (e) => e.data.cepTrackingKey === trackingKey, timeoutMs);
  const detail = await orderDetail(stack, order.id);
  assert.equal(detail.status, "LOCKED", "a rejected proof leaves the order LOCKED");
  assert.equal(detail.cepTrackingKey, null);
  return entry.data;
}

describe("reporting a payment", () => {
  test("a report signed by another wallet than the buyer's is refused with INVALID_SIGNATURE and changes nothing", async () => {
    const order = await lockedOrder(stack);
    const body = await signedReport(order, { trackingKey: "BNET01002611210000001", operationDate: mexicoCityDate(new Date()), senderBankCode: "40002" }, STRANGER);
    const response = await report(stack, order.id, body);
    assert.equal(response.status, 401);
    assert.equal(response.body.error, "INVALID_SIGNATURE");
    assert.equal(typeof response.body.message, "string");
    const detail = await orderDetail(stack, order.id);
    assert.equal(detail.status, "LOCKED");
    assert.equal(detail.timeline.some((entry) => entry.event === "PAYMENT_REPORTED"), false);
  });

  test("a buyer's signature over other report text is refused with INVALID_SIGNATURE", async () => {
    const order = await lockedOrder(stack);
    const signed = await signedReport(order, { trackingKey: "BNET01002611210000002", operationDate: mexicoCityDate(new Date()), senderBankCode: "40002" }, BUYER);
    const response = await report(stack, order.id, { ...signed, trackingKey: "BNET01002611210000003" });
    assert.equal(response.status, 401);
    assert.equal(response.body.error, "INVALID_SIGNATURE");
    assert.equal((await orderDetail(stack, order.id)).timeline.some((entry) => entry.event === "PAYMENT_REPORTED"), false);
  });

  test("65 bytes that are no signature are INVALID_SIGNATURE; a malformed one is VALIDATION_ERROR", async () => {
    const order = await lockedOrder(stack);
    const fields = { trackingKey: "BNET01002611210000004", operationDate: mexicoCityDate(new Date()), senderBankCode: "40002" };
    const zero = await report(stack, order.id, { ...fields, signature: `0x${"00".repeat(65)}` });
    assert.equal(zero.status, 401);
    assert.equal(zero.body.error, "INVALID_SIGNATURE");
    const short = await report(stack, order.id, { ...fields, signature: "0x1234" });
    assert.equal(short.status, 400);
    assert.equal(short.body.error, "VALIDATION_ERROR");
  });

  test("bad fields are VALIDATION_ERROR: tracking key, date, unknown sending bank, amount, unknown field", async () => {
    const order = await lockedOrder(stack);
    const good = await signedReport(order, { trackingKey: "BNET01002611210000005", operationDate: mexicoCityDate(new Date()), senderBankCode: "40002" }, BUYER);
    for (const bad of [
      { trackingKey: "has spaces in it" },
      { trackingKey: "X".repeat(31) },
      { operationDate: "2026-02-30" },
      { operationDate: "21-11-2026" },
      { senderBankCode: "99999" },
      { senderBankCode: "999" },
      { amountMxn: 10.001 },
      { amountMxn: 0 },
      { extra: true },
    ]) {
      const response = await report(stack, order.id, { ...good, ...bad });
      assert.equal(response.status, 400, JSON.stringify(bad));
      assert.equal(response.body.error, "VALIDATION_ERROR", JSON.stringify(bad));
    }
    assert.equal((await orderDetail(stack, order.id)).timeline.some((entry) => entry.event === "PAYMENT_REPORTED"), false);
  });

  test("an order that is not LOCKED is INVALID_STATE; another partner's or a missing order is NOT_FOUND", async () => {
    const order = await placeOrder(stack);
    const body = { trackingKey: "BNET01002611210000006", operationDate: mexicoCityDate(new Date()), senderBankCode: "40002", signature: `0x${"11".repeat(65)}` };
    const pending = await report(stack, order.id, body);
    assert.equal(pending.status, 409);
    assert.equal(pending.body.error, "INVALID_STATE");
    const missing = await report(stack, "ord_000000000000000000000000", body);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, "NOT_FOUND");
    const other = await stack.service.createPartner({ name: "Other partner" });
    const foreign = await stack.service.api("POST", `/orders/${order.id}/payment`, { key: other.apiKey, body });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error, "NOT_FOUND");
  });

  test("the same payment reported twice (bank as participant code, then as CLABE prefix) is verified once", async () => {
    const order = await lockedOrder(stack);
    const { trackingKey } = recordPayment(order, { trackingKey: `DUP${Date.now()}` });
    const operationDate = mexicoCityDate(new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))));
    const first = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "40002" }, BUYER));
    const second = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "002" }, BUYER));
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(second.status, 202, JSON.stringify(second.body));
    // The second answer is the first report's payment, as it stands: its verification may have ended between
    // the two reports (it did, in a clean-clone run).
    const { verification: firstVerification, ...firstPayment } = first.body.payment as Json;
    const { verification: secondVerification, ...secondPayment } = second.body.payment as Json;
    assert.deepEqual(secondPayment, firstPayment);
    assert.equal(firstVerification, "PENDING");
    assert.ok(secondVerification === "PENDING" || secondVerification === "VERIFIED", String(secondVerification));
    const verified = await waitForVerified(stack, order.id);
    assert.equal(verified.timeline.filter((entry) => entry.event === "PAYMENT_REPORTED").length, 1);
    assert.equal(proxy.queriesFor(trackingKey), 1, "one verification, one portal query");
    const replay = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "40002" }, BUYER));
    assert.equal(replay.status, 202);
    assert.equal((replay.body.payment as Json).verification, "VERIFIED");
  });

  test("sandbox pay on an order that is not LOCKED is INVALID_STATE", async () => {
    const order = await placeOrder(stack);
    const response = await pay(order);
    assert.equal(response.status, 409);
    assert.equal(response.body.error, "INVALID_STATE");
  });
});

describe("checking the CEP", { concurrency: true }, () => {
  test("a payment of exactly totalMxn is verified", async () => {
    const order = await lockedOrder(stack);
    const paid = await pay(order, { amountMxn: order.totalMxn });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const detail = await waitForVerified(stack, order.id);
    assert.equal(detail.cepTrackingKey, paid.body.trackingKey);
    assert.ok(detail.cepValidatedAt);
  });

  test("a payment one cent short of totalMxn is rejected with AMOUNT_TOO_LOW", async () => {
    const order = await lockedOrder(stack);
    const paid = await pay(order, { amountMxn: Number((order.totalMxn - 0.01).toFixed(2)) });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const data = await rejection(order, paid.body.trackingKey);
    assert.equal(data.reason, "AMOUNT_TOO_LOW");
    assert.match(String(data.message), /less than the order total/);
  });

  test("a payment made before the lock is rejected with DATE_OUTSIDE_LOCK_WINDOW", async () => {
    const order = await lockedOrder(stack);
    const paid = await pay(order, { paidAt: new Date(Date.parse(order.lockedAt!) - 60_000).toISOString() });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal((await rejection(order, paid.body.trackingKey)).reason, "DATE_OUTSIDE_LOCK_WINDOW");
  });

  test("a payment to another CLABE is not found at the seller's account: rejected with CEP_NOT_FOUND after six queries", async () => {
    const order = await lockedOrder(stack);
    const paid = await pay(order, { clabe: OTHER_CLABE });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const data = await rejection(order, paid.body.trackingKey, NOT_FOUND_WAIT_MS);
    assert.equal(data.reason, "CEP_NOT_FOUND");
    assert.equal(proxy.queriesFor(paid.body.trackingKey), 6);
    for (const query of proxy.queries.filter((form) => form.get("criterio") === paid.body.trackingKey)) assert.equal(query.get("cuenta"), String((order.bankAccount as Json).clabe));
  });

  test("a portal answering with the receipt of a payment to another account: rejected with BENEFICIARY_MISMATCH", async () => {
    const order = await lockedOrder(stack);
    const { trackingKey } = recordPayment(order, { trackingKey: `BEN${Date.now()}`, beneficiaryAccount: OTHER_CLABE, receiverBankCode: "40072" });
    proxy.rewrites.set(trackingKey.toUpperCase(), (form) => {
      form.set("cuenta", OTHER_CLABE);
      form.set("receptor", "40072");
    });
    const operationDate = mexicoCityDate(new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))));
    const accepted = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "40002" }, BUYER));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal((await rejection(order, trackingKey)).reason, "BENEFICIARY_MISMATCH");
  });

  test("a portal answering with the receipt of another tracking key: rejected with TRACKING_KEY_MISMATCH", async () => {
    const order = await lockedOrder(stack);
    const other = recordPayment(order, { trackingKey: `OTHER${Date.now()}` });
    const reported = `ASKED${Date.now()}`;
    proxy.rewrites.set(reported.toUpperCase(), (form) => form.set("criterio", other.trackingKey));
    const operationDate = mexicoCityDate(new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))));
    const accepted = await report(stack, order.id, await signedReport(order, { trackingKey: reported, operationDate, senderBankCode: "40002" }, BUYER));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal((await rejection(order, reported)).reason, "TRACKING_KEY_MISMATCH");
  });

  test("a payment that settled one order, reported for a second order, is rejected with CEP_ALREADY_USED", async () => {
    // Both are locked before the payment, so only its earlier use tells them apart.
    const first = await lockedOrder(stack);
    const second = await lockedOrder(stack, { buyerWallet: 2 });
    assert.equal(second.totalMxn, first.totalMxn);
    const paid = await pay(first, { paidAt: new Date(Math.max(Date.now(), Date.parse(second.lockedAt!)) + 1000).toISOString() });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    await waitForVerified(stack, first.id);
    const fields = { trackingKey: paid.body.trackingKey, operationDate: paid.body.operationDate, senderBankCode: paid.body.senderBankCode };
    const again = await report(stack, second.id, await signedReport(second, fields, 2));
    assert.equal(again.status, 202, JSON.stringify(again.body));
    const data = await rejection(second, paid.body.trackingKey);
    assert.equal(data.reason, "CEP_ALREADY_USED");
    assert.equal(String(data.message).includes(first.id), false, "the other order is not named");
  });

  test("a payment the portal does not know yet is verified once it appears (not found is retried)", async () => {
    const order = await lockedOrder(stack);
    const trackingKey = `LATE${Date.now()}`;
    const operationDate = mexicoCityDate(new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))));
    const accepted = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "40002" }, BUYER));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await waitFor("two not-found answers", async () => (proxy.queriesFor(trackingKey) >= 2 ? true : undefined));
    recordPayment(order, { trackingKey });
    const detail = await waitForVerified(stack, order.id);
    assert.equal(detail.cepTrackingKey, trackingKey);
    assert.equal(detail.timeline.some((entry) => entry.event === "PAYMENT_REJECTED"), false);
  });

  test("a payment whose CEP is not yet available is retried and verified once it is", async () => {
    const order = await lockedOrder(stack);
    const trackingKey = `SOON${Date.now()}`;
    const availableAfter = new Date(Date.now() + 6_000);
    portal.recordPayment({
      trackingKey,
      operationAt: new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))),
      amountMxn: order.totalMxn.toFixed(2),
      beneficiaryAccount: String((order.bankAccount as Json).clabe),
      receiverBankCode: "40012",
      senderBankCode: "40002",
      ...ownAccount,
      concept: `PAGO ${String(order.paymentConcept)}`,
      availableAfter,
    });
    const operationDate = mexicoCityDate(new Date(Math.max(Date.now(), Date.parse(order.lockedAt!))));
    const accepted = await report(stack, order.id, await signedReport(order, { trackingKey, operationDate, senderBankCode: "40002" }, BUYER));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const detail = await waitForVerified(stack, order.id);
    assert.ok(Date.parse(detail.cepValidatedAt!) >= availableAfter.getTime());
    assert.ok(proxy.queriesFor(trackingKey) >= 2, "asked again after 'not yet available'");
  });
});

describe("portal outages", () => {
  for (const mode of ["rate_limited", "down", "malformed_xml"] as const) {
    test(`a portal that is ${mode.replace("_", " ")} is asked again until it answers, then the payment is verified`, async () => {
      const order = await lockedOrder(stack);
      portal.setMode(mode);
      try {
        const paid = await pay(order);
        assert.equal(paid.status, 200, JSON.stringify(paid.body));
        await waitFor("two attempts against the failing portal", async () => (proxy.queriesFor(paid.body.trackingKey) >= 2 ? true : undefined));
        assert.equal((await orderDetail(stack, order.id)).status, "LOCKED");
        portal.setMode("normal");
        const detail = await waitForVerified(stack, order.id);
        assert.equal(detail.cepTrackingKey, paid.body.trackingKey);
      } finally {
        portal.setMode("normal");
      }
    });
  }
});
