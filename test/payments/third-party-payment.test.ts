// Decisions 8, "the buyer pays from their own account", on the real chain, indexer and service: the CEP's
// ordering party (written by the CEP simulator from the sandbox payer) is compared with the verified
// identity of the buyer who locked; a third-party payment is held (no release, the CEP used up) until an
// operator decides with POST /admin/v1/orders/:id/review. The sandbox wallets' buyers carry a generated
// identity (syntheticIdentity of the wallet); market buyers the one their sandbox KYC decision named.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { syntheticIdentity } from "../../src/domain/payer-identity.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startChainStack, waitFor, type ChainStack, type TradeStack } from "../support/trade-stack.ts";
import { activeOrder, fund, lockWithPermit, market, signIn, type PermitAnswer } from "../market/support.ts";
import {
  chainTransactions,
  settledChainTransactions,
  lockedOrder,
  orderDetail,
  outboxEvents,
  report,
  sandbox,
  signedReport,
  waitForStatus,
  waitForTimeline,
  type Json,
  type OrderDetail,
  type PaymentStack,
  type TimelineEntry,
} from "./support/payments.ts";

// Long enough to pay and verify inside it, short enough to see a held lock expire.
const LOCK_WINDOW_SECONDS = 30;
const ENV = { LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) };
const BUYER = 1;
const buyerIdentity = syntheticIdentity(sandboxAccounts[BUYER]!.address.toLowerCase());
const STRANGER = { payerName: "ROSA ELENA QUIROZ LUNA", payerRfc: "QULR850312HJ4" };

let chainStack: ChainStack;
let service: TestService;
let partner: { id: string; apiKey: string; webhookSecret: string };
// The service may be restarted mid-file: every helper reads the current one.
const stack = {
  get service() {
    return service;
  },
  get partner() {
    return partner;
  },
  get chainSettings() {
    return chainStack.chainSettings;
  },
  get deployment() {
    return chainStack.deployment;
  },
} as PaymentStack & TradeStack;

before(async () => {
  chainStack = await startChainStack();
  service = await startTestService(ENV, { databaseUrl: chainStack.databaseUrl, indexerSchema: chainStack.indexerSchema, chain: chainStack.chainSettings });
  partner = await service.createPartner({ tier: "ENTERPRISE" });
});
after(async () => {
  await service?.close();
  await chainStack?.close();
});

interface ThirdPartyView {
  payer: { name: string; rfcOrCurp: string | null; account: string; bank: string };
  buyer: { wallet: string; name: string | null; curp: string | null; rfc: string | null };
  comparedBy: string;
  decision: string | null;
  releasePossibleUntil: string;
}
interface AdminOrder extends OrderDetail {
  thirdPartyPayment: ThirdPartyView | null;
}

const adminOrder = async (id: string) => (await service.admin<AdminOrder>("GET", `/orders/${id}`)).body;
const reviewQueue = async () => (await service.admin<{ orders: (Json & { id: string; thirdPartyPayment: ThirdPartyView })[] }>("GET", "/orders?review=THIRD_PARTY_PAYMENT")).body.orders;
const decide = (id: string, decision: string, note?: string) => service.admin<AdminOrder & { error?: string; message?: string }>("POST", `/orders/${id}/review`, { decision, ...(note ? { note } : {}) });

/** A locked order paid through the partner sandbox helper (as `payer`, default the buyer), and its verdict on the timeline. */
async function paidOrder(payer: Json = {}, verdict = "PAYMENT_VERIFIED"): Promise<OrderDetail & { trackingKey: string }> {
  const order = await lockedOrder(stack, { buyerWallet: BUYER });
  const paid = await sandbox<{ trackingKey: string }>(stack, order.id, "pay", payer);
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  await waitForTimeline(stack, order.id, verdict);
  return { ...order, trackingKey: paid.body.trackingKey };
}

const events = (timeline: TimelineEntry[]) => timeline.map((entry) => entry.event);
const printTimeline = (title: string, timeline: TimelineEntry[]) =>
  console.log(`# ${title}\n${timeline.map((entry) => `#   ${entry.timestamp} ${entry.event} ${JSON.stringify(entry.data)}`).join("\n")}`);

describe("a payment from the buyer's own account", () => {
  test("completes as before: no hold, the release is sent", async () => {
    const order = await paidOrder();
    const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
    assert.ok(!events(completed.timeline).includes("THIRD_PARTY_PAYMENT"));
    assert.equal((await adminOrder(order.id)).thirdPartyPayment, null);
  });

  test("names that differ only by accents, case, spaces or word order are the buyer's", async () => {
    const [given, ...surnames] = buyerIdentity.name.split(" ");
    const variant = `  ${surnames.map((word) => word.toLowerCase()).join("   ")},  ${given!.charAt(0)}${given!.slice(1).toLowerCase().replace("a", "á")} `;
    const order = await paidOrder({ payerName: variant, payerRfc: "ND" });
    await waitForStatus(stack, order.id, "COMPLETED", 40_000);
  });

  test("the RFC beats the name: the buyer's RFC under another name completes, another RFC under the buyer's name is held", async () => {
    const own = await paidOrder({ payerName: "NOMBRE DE LA CUENTA DISTINTO", payerRfc: buyerIdentity.rfc });
    await waitForStatus(stack, own.id, "COMPLETED", 40_000);
    const other = await paidOrder({ payerName: buyerIdentity.name, payerRfc: STRANGER.payerRfc }, "THIRD_PARTY_PAYMENT");
    const held = await adminOrder(other.id);
    assert.equal(held.status, "LOCKED");
    assert.equal(held.thirdPartyPayment?.comparedBy, "RFC");
  });
});

describe("another payer's payment", () => {
  let order: OrderDetail & { trackingKey: string };
  before(async () => {
    order = await paidOrder(STRANGER, "THIRD_PARTY_PAYMENT");
  });

  test("is held: LOCKED, nothing sent, and the partner's timeline and webhooks say only \"third-party payment\"", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a release, if wrongly asked for, is recorded by then
    const detail = await orderDetail(stack, order.id);
    assert.equal(detail.status, "LOCKED");
    assert.deepEqual(await chainTransactions(service.pool, order.id), []);
    const entry = detail.timeline.find((item) => item.event === "THIRD_PARTY_PAYMENT")!;
    assert.deepEqual(Object.keys(entry.data).sort(), ["amountMxn", "cepTrackingKey", "paidAt", "reason"]);
    assert.equal(entry.data.reason, "third-party payment");
    const seen = JSON.stringify([detail, await outboxEvents(service.pool, order.id)]);
    for (const secret of [STRANGER.payerName, STRANGER.payerRfc, "QUIROZ", buyerIdentity.rfc, buyerIdentity.curp]) assert.ok(!seen.includes(secret), `${secret} leaks to the partner`);
  });

  test("the review queue shows the payer beside the buyer's verified identity, and the operator's timeline names the payer", async () => {
    const queued = (await reviewQueue()).find((item) => item.id === order.id);
    assert.ok(queued, "in the THIRD_PARTY_PAYMENT queue");
    assert.deepEqual([queued.thirdPartyPayment.payer.name, queued.thirdPartyPayment.payer.rfcOrCurp], [STRANGER.payerName, STRANGER.payerRfc]);
    assert.deepEqual([queued.thirdPartyPayment.buyer.name, queued.thirdPartyPayment.buyer.rfc], [buyerIdentity.name, buyerIdentity.rfc]);
    assert.equal(queued.thirdPartyPayment.comparedBy, "RFC");
    const admin = await adminOrder(order.id);
    const entry = admin.timeline.find((item) => item.event === "THIRD_PARTY_PAYMENT")!;
    assert.equal((entry.data.payer as Json).name, STRANGER.payerName);
    const stats = await service.admin<{ queues: { thirdPartyPayments: number } }>("GET", "/stats");
    assert.ok(stats.body.queues.thirdPartyPayments >= 1);
  });

  test("its CEP cannot pay another order: reported there, it is rejected CEP_ALREADY_USED", async () => {
    // The other order was locked before this payment, so only the CEP's earlier use stands in the way.
    const other = await lockedOrder(stack, { buyerWallet: BUYER });
    const payment = await paidOrder(STRANGER, "THIRD_PARTY_PAYMENT");
    const cep = (await orderDetail(stack, payment.id)).timeline.find((item) => item.event === "PAYMENT_REPORTED")!.data;
    const body = await signedReport(other, { trackingKey: payment.trackingKey, operationDate: String(cep.operationDate), senderBankCode: String(cep.senderBankCode) }, BUYER);
    const answer = await report(stack, other.id, body);
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    const rejected = await waitForTimeline(stack, other.id, "PAYMENT_REJECTED");
    assert.equal(rejected.data.reason, "CEP_ALREADY_USED");
    assert.equal((await orderDetail(stack, other.id)).status, "LOCKED");
  });

  test("the operator's RELEASE (the payer is the buyer after all) sends the release once and the order completes", async () => {
    const decided = await decide(order.id, "RELEASE", "the buyer's second account, statement checked");
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.thirdPartyPayment?.decision, "RELEASE");
    const completed = await waitForStatus(stack, order.id, "COMPLETED", 40_000);
    const path = events(completed.timeline);
    assert.deepEqual(path.slice(path.indexOf("LOCKED")), ["LOCKED", "PAYMENT_REPORTED", "THIRD_PARTY_PAYMENT", "HOLD_DECIDED", "PAYMENT_VERIFIED", "COMPLETED"]);
    assert.deepEqual((await settledChainTransactions(service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["confirmPayment", "MINED"]]);
    assert.ok(!(await reviewQueue()).some((item) => item.id === order.id), "decided orders leave the queue");
    assert.equal((await decide(order.id, "REFUND")).status, 409);
    printTimeline(`held trade ${order.id}, lock to the operator's RELEASE (operator's view)`, (await adminOrder(order.id)).timeline);
  });
});

describe("a held payment refunded by the operator", () => {
  test("REFUND before the lock expires: the lock timer then refunds the seller, and the CEP stays used", async () => {
    const order = await paidOrder(STRANGER, "THIRD_PARTY_PAYMENT");
    const decided = await decide(order.id, "REFUND", "stranger's account: the seller returns the pesos");
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const refunded = await waitForStatus(stack, order.id, "REFUNDED", (LOCK_WINDOW_SECONDS + 40) * 1000);
    assert.ok(!events(refunded.timeline).includes("COMPLETED"));
    assert.deepEqual((await settledChainTransactions(service.pool, order.id)).map((tx) => [tx.action, tx.status]), [["refundExpiredLock", "MINED"]]);
    const used = await service.pool.query("SELECT 1 FROM orders WHERE id = $1 AND cep_hash IS NOT NULL", [order.id]);
    assert.equal(used.rowCount, 1);
    printTimeline(`held trade ${order.id}, lock to the operator's REFUND`, (await adminOrder(order.id)).timeline);
  });
});

describe("a held order across a restart and its lock's expiry", () => {
  test("stays held through both, and the operator's RELEASE inside the refund grace still completes it", async () => {
    const order = await paidOrder(STRANGER, "THIRD_PARTY_PAYMENT");
    await service.close();
    service = await startTestService(ENV, { databaseUrl: chainStack.databaseUrl, indexerSchema: chainStack.indexerSchema, chain: chainStack.chainSettings });
    const held = await waitForTimeline(stack, order.id, "LOCK_EXPIRY_REFUND_HELD", undefined, (LOCK_WINDOW_SECONDS + 30) * 1000);
    assert.equal(held.data.reason, "THIRD_PARTY_PAYMENT");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const detail = await adminOrder(order.id);
    assert.equal(detail.status, "LOCKED");
    assert.ok(Date.parse(detail.lockExpiresAt!) < Date.now(), "the lock has expired");
    assert.ok(Date.parse(detail.thirdPartyPayment!.releasePossibleUntil) > Date.now());
    assert.deepEqual(await chainTransactions(service.pool, order.id), [], "no refund behind the operator's back");
    assert.equal((await decide(order.id, "RELEASE", "confirmed with the buyer")).status, 200);
    await waitForStatus(stack, order.id, "COMPLETED", 40_000);
  });
});

describe("a market buyer", () => {
  test("whose KYC named them pays from their own account and completes; paid by someone else, the trade shows HELD and why, never who", async () => {
    const buyer = await signIn(stack);
    await fund(stack, buyer.account.address, { eth: 1, usdc: 0 });
    const session = await market<{ sessionId: string }>(stack, "POST", "/me/kyc", { token: buyer.token, body: { level: "FULL", returnUrl: "http://localhost/back" } });
    const identity = { name: "Ana Sofía Ramírez Torres", curp: "RATA900215MDFMRN05", rfc: "RATA900215K21" };
    const decided = await market(stack, "POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { token: buyer.token, body: { result: "APPROVED", ...identity } });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.ok(!JSON.stringify(decided.body).includes("RATA900215"), "the buyer's own profile does not echo the identity numbers");
    const stored = await service.pool.query("SELECT verified_name, verified_curp, verified_rfc FROM buyers WHERE wallet = $1", [buyer.account.address.toLowerCase()]);
    assert.deepEqual(stored.rows[0], { verified_name: identity.name, verified_curp: identity.curp, verified_rfc: identity.rfc });

    const trade = async (payer: Json) => {
      const order = await activeOrder(stack);
      const permit = await market<PermitAnswer>(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: buyer.token });
      assert.equal(permit.status, 201, JSON.stringify(permit.body));
      await lockWithPermit(stack, buyer.account, permit.body);
      await waitForStatus(stack, order.id, "LOCKED");
      const paid = await market<Json>(stack, "POST", `/sandbox/trades/${order.escrowOrderId}/spei`, { token: buyer.token, body: payer });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const reported = await market(stack, "POST", `/trades/${order.escrowOrderId}/payment`, {
        token: buyer.token,
        body: { trackingKey: paid.body.trackingKey, operationDate: paid.body.operationDate, senderBankCode: paid.body.senderBankCode },
      });
      assert.equal(reported.status, 202, JSON.stringify(reported.body));
      return order;
    };

    const own = await trade({});
    await waitForStatus(stack, own.id, "COMPLETED", 40_000);

    const other = await trade({ payerName: "PEDRO INFANTE CRUZ" });
    const held = await waitFor("the trade HELD", async () => {
      const detail = await market<{ paymentReport: Json | null; timeline: TimelineEntry[]; status: string }>(stack, "GET", `/trades/${other.escrowOrderId}`, { token: buyer.token });
      return detail.body.paymentReport?.verification === "HELD" ? detail.body : undefined;
    }, 40_000);
    assert.equal(held.status, "LOCKED");
    assert.match(String(held.paymentReport!.holdReason), /not in your verified name/);
    const entry = held.timeline.find((item) => item.event === "THIRD_PARTY_PAYMENT")!;
    assert.deepEqual(Object.keys(entry.data).sort(), ["cepTrackingKey", "reason"]);
    assert.ok(!JSON.stringify(held).includes("PEDRO"), "the buyer is not shown who paid");
    const queued = (await reviewQueue()).find((item) => item.id === other.id)!;
    assert.deepEqual([queued.thirdPartyPayment.payer.name, queued.thirdPartyPayment.payer.rfcOrCurp, queued.thirdPartyPayment.comparedBy], ["PEDRO INFANTE CRUZ", "ND", "NAME"]);
    assert.equal(queued.thirdPartyPayment.buyer.name, identity.name);
  });
});
