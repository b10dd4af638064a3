// Decisions 19, "sanctions cut both ways", on the real chain, indexer and service: a buyer whose KYC
// decision carries a sanctions (or PEP) match is stopped as a listed wallet is (lock permits refused with
// 403 USER_SANCTIONED, open locks held for review), and a deposit from a wallet on the sanctions list holds
// its order for review instead of listing it (the operator refunds it to its depositor, or lists it).
// Sandbox wallet SANCTIONED_SANDBOX_WALLET is on the sandbox sanctions list.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SANCTIONED_SANDBOX_WALLET } from "../../src/stack/local-node.ts";
import { placeOrder, startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { activeOrder, approveKyc, fund, lockWithPermit, market, signIn, type Buyer, type Json, type PermitAnswer } from "../market/support.ts";
import { chainTransactions, settledChainTransactions } from "../payments/support/payments.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(() => stack?.close());

interface AdminOrder extends Json {
  status: string;
  refundTxHash: string | null;
  timeline: { event: string; data: Json }[];
  sanctionsHold: Json | null;
  depositHold: Json | null;
}
const adminOrder = async (id: string) => (await stack.service.admin<AdminOrder>("GET", `/orders/${id}`)).body;
const sanctionsQueue = async () => (await stack.service.admin<{ orders: { id: string }[] }>("GET", "/orders?review=SANCTIONS_HOLD")).body.orders.map((order) => order.id);
// Read with a session: the book works with one whether or not it is also public.
const bookIds = async () => {
  const reader = await signIn(stack);
  const book = await market<{ orders: { escrowOrderId: string }[] }>(stack, "GET", "/orders?limit=100", { token: reader.token });
  assert.equal(book.status, 200, JSON.stringify(book.body));
  return book.body.orders.map((order) => order.escrowOrderId);
};

/** A KYC session of the buyer decided APPROVED with the provider's PEP/sanctions match field set. */
async function kycWithMatch(buyer: Buyer) {
  const session = await market<{ sessionId: string }>(stack, "POST", "/me/kyc", { token: buyer.token, body: { level: "BASIC", returnUrl: "http://localhost/back" } });
  assert.equal(session.status, 201, JSON.stringify(session.body));
  const decided = await market(stack, "POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { token: buyer.token, body: { result: "APPROVED", isPep: true } });
  assert.equal(decided.status, 200, JSON.stringify(decided.body));
}

describe("a buyer whose KYC decision carries a sanctions match", () => {
  test("is refused lock permits: 403 USER_SANCTIONED", async () => {
    const buyer = await signIn(stack);
    await kycWithMatch(buyer);
    const order = await activeOrder(stack);
    const permit = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: buyer.token });
    assert.deepEqual([permit.status, permit.body.error], [403, "USER_SANCTIONED"]);
    assert.equal((await adminOrder(order.id)).status, "ACTIVE");
  });

  test("has its open lock held for review: its payment is verified but not released", async () => {
    const buyer = await signIn(stack);
    await fund(stack, buyer.account.address, { eth: 1, usdc: 0 });
    await approveKyc(stack, buyer, "BASIC");
    const order = await activeOrder(stack);
    const permit = await market<PermitAnswer>(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: buyer.token });
    assert.equal(permit.status, 201, JSON.stringify(permit.body));
    await lockWithPermit(stack, buyer.account, permit.body);
    await waitForStatus(stack, order.id, "LOCKED");

    await kycWithMatch(buyer);
    const held = await adminOrder(order.id);
    const entry = held.timeline.find((item) => item.event === "SANCTIONS_HOLD");
    assert.ok(entry, "SANCTIONS_HOLD on the timeline");
    assert.equal(String(entry.data.buyerWallet).toLowerCase(), buyer.account.address.toLowerCase());
    assert.ok((await sanctionsQueue()).includes(order.id));

    const paid = await market<Json>(stack, "POST", `/sandbox/trades/${order.escrowOrderId}/spei`, { token: buyer.token, body: {} });
    const reported = await market(stack, "POST", `/trades/${order.escrowOrderId}/payment`, {
      token: buyer.token,
      body: { trackingKey: paid.body.trackingKey, operationDate: paid.body.operationDate, senderBankCode: paid.body.senderBankCode },
    });
    assert.equal(reported.status, 202, JSON.stringify(reported.body));
    await waitFor("the held verification", async () => ((await adminOrder(order.id)).timeline.some((item) => item.event === "PAYMENT_VERIFIED_HELD") ? true : undefined), 40_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal((await adminOrder(order.id)).status, "LOCKED");
    assert.deepEqual(await chainTransactions(stack.service.pool, order.id), []);
  });
});

describe("a deposit from a wallet on the sanctions list", () => {
  async function listedDeposit() {
    const order = await placeOrder(stack);
    const deposit = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey, body: { sellerWallet: SANCTIONED_SANDBOX_WALLET } });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    await waitForStatus(stack, order.id, "ACTIVE");
    return { id: order.id, escrowOrderId: String(order.escrowOrderId) };
  }

  test("holds its order for review instead of listing it: not in the book, no permit", async () => {
    const order = await listedDeposit();
    const detail = await adminOrder(order.id);
    assert.equal(detail.depositHold?.decision, null);
    assert.equal(detail.depositHold?.listEntry, "SANDBOX SANCTIONED WALLET");
    assert.ok(detail.timeline.some((item) => item.event === "SANCTIONS_HOLD" && item.data.sellerWallet));
    assert.ok((await sanctionsQueue()).includes(order.id));
    assert.ok(!(await bookIds()).includes(order.escrowOrderId), "not listed");
    const buyer = await signIn(stack);
    await approveKyc(stack, buyer, "BASIC");
    const permit = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: buyer.token });
    assert.deepEqual([permit.status, permit.body.error], [409, "ORDER_NOT_AVAILABLE"]);
  });

  test("the operator's REFUND returns the deposit to its depositor; RELEASE lists the order", async () => {
    const refunded = await listedDeposit();
    const refund = await stack.service.admin<AdminOrder>("POST", `/orders/${refunded.id}/review`, { decision: "REFUND", note: "listed depositor" });
    assert.equal(refund.status, 200, JSON.stringify(refund.body));
    await waitFor("the refund", async () => ((await adminOrder(refunded.id)).status === "REFUNDED" ? true : undefined), 40_000);
    assert.deepEqual((await settledChainTransactions(stack.service.pool, refunded.id)).map((tx) => [tx.action, tx.status]), [["cancel", "MINED"]]);

    const listed = await listedDeposit();
    const release = await stack.service.admin<AdminOrder>("POST", `/orders/${listed.id}/review`, { decision: "RELEASE", note: "false positive" });
    assert.equal(release.status, 200, JSON.stringify(release.body));
    assert.ok((await bookIds()).includes(listed.escrowOrderId), "listed after the operator's RELEASE");
    assert.ok(!(await sanctionsQueue()).includes(listed.id));
  });
});
