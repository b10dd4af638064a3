import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";
import { eventTable } from "../../src/sync/indexer-tables.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { placeOrder, sentToChain, startTradeStack, waitForSettled, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";
import { adminOrder, disputedOrder, resolve, waitForWebhook, type AdminOrderDetail } from "./support.ts";

// When POST /admin/v1/orders/:id/resolve may act, and that it acts once (decisions section 12), on the
// real chain and indexer. The lock window is short so a retried order's new lock can run out here.

const LOCK_WINDOW_SECONDS = 15;

let stack: TradeStack;
let receiver: TestReceiver;

before(async () => {
  receiver = await startReceiver();
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: String(LOCK_WINDOW_SECONDS) }, { webhookUrl: receiver.url });
});
after(async () => {
  await stack?.close();
  await receiver?.close();
});

const resolveRequest = (orderId: string, body: unknown) => stack.service.admin<AdminOrderDetail>("POST", `/orders/${orderId}/resolve`, body);

async function resolutionTransactions(orderId: string) {
  const { rows } = await stack.service.pool.query<{ status: string; tx_hash: string | null }>(
    "SELECT status, tx_hash FROM chain_transactions WHERE order_id = $1 AND action = 'resolveDispute'",
    [orderId],
  );
  return rows;
}

async function disputeResolvedLogs(escrowOrderId: string): Promise<number> {
  const { rows } = await stack.service.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${eventTable(stack.indexerSchema)} WHERE event_name = 'DisputeResolved' AND order_id = $1`, [
    escrowOrderId.toLowerCase(),
  ]);
  return rows[0]!.n;
}

async function setPaused(paused: boolean): Promise<void> {
  const { gateway } = stack.service.chain!;
  const admin = gateway.walletClient(privateKeyToAccount(devAccounts[DEV_ACCOUNT.admin].privateKey));
  const hash = await admin.writeContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: paused ? "pause" : "unpause", chain: gateway.chain });
  const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, "success");
}

describe("outside DISPUTED", () => {
  test("resolving a LOCKED order answers 409 ORDER_NOT_DISPUTED and sends nothing", async () => {
    const order = await placeOrder(stack);
    await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
    await waitForStatus(stack, order.id, "ACTIVE");
    await stack.service.api("POST", `/sandbox/orders/${order.id}/lock`, { key: stack.partner.apiKey, body: {} });
    await waitForStatus(stack, order.id, "LOCKED");
    assertError(await resolveRequest(order.id, { outcome: "BUYER" }), 409, "ORDER_NOT_DISPUTED");
    assert.deepEqual(await resolutionTransactions(order.id), []);
    assert.equal((await adminOrder(stack, order.id)).timeline.some((entry) => entry.event === "DISPUTE_RESOLUTION_REQUESTED"), false);
  });

  test("resolving an order that has not been deposited answers 409 ORDER_NOT_DISPUTED", async () => {
    const order = await placeOrder(stack);
    assertError(await resolveRequest(order.id, { outcome: "SELLER" }), 409, "ORDER_NOT_DISPUTED");
  });

  test("resolving an unknown order answers 404 NOT_FOUND", async () => {
    assertError(await resolveRequest("ord_doesnotexist", { outcome: "BUYER" }), 404, "NOT_FOUND");
  });

  test("an outcome outside the five answers 400 VALIDATION_ERROR", async () => {
    const order = await placeOrder(stack);
    assertError(await resolveRequest(order.id, { outcome: "SPLIT" }), 400, "VALIDATION_ERROR");
    assertError(await resolveRequest(order.id, {}), 400, "VALIDATION_ERROR");
  });

  test("resolving needs the admin token", async () => {
    const response = await fetch(`${stack.service.baseUrl}/admin/v1/orders/ord_x/resolve`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ outcome: "BUYER" }),
    });
    assert.equal(response.status, 401);
    assert.equal(((await response.json()) as { error: string }).error, "UNAUTHORIZED");
  });
});

describe("once only", () => {
  test("two resolutions asked for at the same time send one arbiter transaction", async () => {
    const order = await disputedOrder(stack, { by: "BUYER", buyerWallet: 1 });
    const answers = await Promise.all([resolveRequest(order.id, { outcome: "BUYER" }), resolveRequest(order.id, { outcome: "BUYER" })]);
    for (const answer of answers) assertStatus(answer, 200);
    await waitForStatus(stack, order.id, "COMPLETED");
    assert.equal((await resolutionTransactions(order.id)).length, 1);
    assert.equal(await disputeResolvedLogs(order.escrowOrderId), 1);
    const requested = (await adminOrder(stack, order.id)).timeline.filter((entry) => entry.event === "DISPUTE_RESOLUTION_REQUESTED");
    assert.equal(requested.length, 1);
  });

  test("resolving again after the chain has settled the dispute answers 409 ORDER_NOT_DISPUTED", async () => {
    const order = await disputedOrder(stack, { by: "SELLER", buyerWallet: 2 });
    await resolve(stack, order.id, "NO_FAULT_REFUND");
    await waitForStatus(stack, order.id, "REFUNDED");
    assertError(await resolveRequest(order.id, { outcome: "NO_FAULT_REFUND" }), 409, "ORDER_NOT_DISPUTED");
    assert.equal((await resolutionTransactions(order.id)).length, 1);
  });
});

describe("while the escrow is paused", () => {
  // Pausing blocks releasing outcomes on chain (the contract's pause policy): the request waits.
  let orderId: string;
  let escrowOrderId: string;
  before(async () => {
    const order = await disputedOrder(stack, { by: "BUYER", buyerWallet: 3 });
    orderId = order.id;
    escrowOrderId = order.escrowOrderId;
    await setPaused(true);
    await resolve(stack, orderId, "BUYER", "paid; escrow paused for an incident");
  });
  after(async () => {
    await setPaused(false).catch(() => undefined);
  });

  test("the order stays DISPUTED with the resolution pending, and nothing is mined", async () => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const detail = await adminOrder(stack, orderId);
    assert.equal(detail.status, "DISPUTED");
    assert.equal(detail.dispute?.resolutionRequest?.outcome, "BUYER");
    assert.equal(detail.dispute?.resolutionRequest?.note, "paid; escrow paused for an incident");
    assert.deepEqual((await resolutionTransactions(orderId)).map((tx) => tx.status), ["PENDING"]);
  });

  test("asking for a different outcome meanwhile answers 409 RESOLUTION_PENDING", async () => {
    assertError(await resolveRequest(orderId, { outcome: "SELLER" }), 409, "RESOLUTION_PENDING");
    assert.equal((await resolutionTransactions(orderId)).length, 1);
  });

  test("asking again for the same outcome answers 200 and records nothing more", async () => {
    const answer = await resolveRequest(orderId, { outcome: "BUYER" });
    assertStatus(answer, 200);
    assert.equal(answer.body.dispute?.resolutionRequest?.outcome, "BUYER");
    assert.equal((await resolutionTransactions(orderId)).length, 1);
  });

  test("once unpaused, the one transaction goes through and the order completes", async () => {
    await setPaused(false);
    await waitForStatus(stack, orderId, "COMPLETED", 90_000);
    assert.deepEqual((await waitForSettled("the resolution", () => resolutionTransactions(orderId))).map((tx) => tx.status), ["MINED"]);
    assert.equal(await disputeResolvedLogs(escrowOrderId), 1);
  });
});

describe("no fault, retry, then the new lock runs out", () => {
  test("the retried order is refunded to the seller when its new lock window ends without payment", async () => {
    const order = await disputedOrder(stack, { by: "BUYER", buyerWallet: 4 });
    await resolve(stack, order.id, "NO_FAULT_RETRY");
    const locked = await waitForStatus(stack, order.id, "LOCKED");
    const refunded = await waitForStatus(stack, order.id, "REFUNDED", (LOCK_WINDOW_SECONDS + 30) * 1000);
    assert.equal(refunded.lockExpiresAt, locked.lockExpiresAt);
    const hooks = await waitForWebhook(receiver, order.id, "order.refunded");
    assert.deepEqual(
      hooks.map((hook) => hook.event).slice(-4),
      ["order.disputed", "order.dispute_resolved", "order.lock_expired", "order.refunded"],
    );
    const detail = await adminOrder(stack, order.id);
    assert.equal(detail.timeline.find((entry) => entry.event === "REFUNDED")?.data.reason, "LOCK_EXPIRED");
    const sent = await waitForSettled("the order's transactions", async () => (await adminOrder(stack, order.id)).transactions);
    assert.deepEqual(
      sentToChain(sent).map((tx) => [tx.action, tx.status]),
      [["resolveDispute", "MINED"], ["refundExpiredLock", "MINED"]],
    );
  });
});
