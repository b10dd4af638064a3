import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Address } from "viem";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { startTradeStack, waitForSettled, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";
import { adminOrder, chainReputation, disputedOrder, escrowCredit, escrowHeld, resolve, usdcBalance, waitForWebhook, webhooksOf, type AdminOrderDetail, type DisputedOrder } from "./support.ts";

// The five dispute outcomes end to end (spec: Disputes; decisions sections 7 and 12): the operator resolves
// through the admin API, the arbiter's transaction goes to the real local chain, and the order follows
// what the indexer sees. Each outcome is one dispute; its tests read what that resolution did.

const TREASURY = devAccounts[DEV_ACCOUNT.treasury].address;
const FEE_WALLET: Address = "0x00000000000000000000000000000000fee0a11e";
const REVENUE_SHARE_PERCENT = 20;
// An amount and fee whose split rounds down at both steps: fee 1,691,358.0093 units, share 338,271.6.
const AMOUNT_USDC = 123.456789;
const FEE_PERCENT = 1.37;

let stack: TradeStack;
let receiver: TestReceiver;

before(async () => {
  receiver = await startReceiver();
  stack = await startTradeStack({}, { webhookUrl: receiver.url, feeWallet: FEE_WALLET, limits: { revenueSharePercent: REVENUE_SHARE_PERCENT } });
});
after(async () => {
  await stack?.close();
  await receiver?.close();
});

/** The release split the escrow must pay, from the order's terms (decisions section 5). */
function expectedSplit(amountRaw: bigint) {
  const fee = (amountRaw * BigInt(Math.round(FEE_PERCENT * 100))) / 10_000n;
  const share = (fee * BigInt(REVENUE_SHARE_PERCENT * 100)) / 10_000n;
  return { buyer: amountRaw - fee, partner: fee - share, treasury: share };
}

interface Resolved {
  order: DisputedOrder;
  detail: AdminOrderDetail;
  before: { balances: Record<string, bigint>; reputation: { seller: bigint; buyer: bigint } };
  after: { balances: Record<string, bigint>; reputation: { seller: bigint; buyer: bigint } };
}

/**
 * What each party has: buyer and seller their wallet balance; the fee wallet and the treasury their fee
 * shares credited in the escrow (pull payments: paid to them only when they withdraw), also kept apart
 * as `feeWalletBalance` / `treasuryBalance` to show that a release transfers them nothing; the escrow
 * what it holds for open orders.
 */
async function snapshot(order: DisputedOrder) {
  const balances: Record<string, bigint> = {
    buyer: await usdcBalance(stack, order.buyer),
    seller: await usdcBalance(stack, order.seller),
    feeWallet: await escrowCredit(stack, FEE_WALLET),
    treasury: await escrowCredit(stack, TREASURY),
    feeWalletBalance: await usdcBalance(stack, FEE_WALLET),
    treasuryBalance: await usdcBalance(stack, TREASURY),
    escrow: await escrowHeld(stack),
  };
  return { balances, reputation: { seller: await chainReputation(stack, order.seller), buyer: await chainReputation(stack, order.buyer) } };
}

/** Takes a fresh order to DISPUTED, resolves it with `outcome` and waits for `finalStatus`. */
async function resolveDispute(options: { by: "BUYER" | "SELLER"; buyerWallet: number; outcome: string; finalStatus: string; note?: string }): Promise<Resolved> {
  const order = await disputedOrder(stack, { by: options.by, buyerWallet: options.buyerWallet, amountUsdc: AMOUNT_USDC, feePercent: FEE_PERCENT, feeRecipient: "PARTNER" });
  const beforeState = await snapshot(order);
  await resolve(stack, order.id, options.outcome, options.note);
  await waitForStatus(stack, order.id, options.finalStatus);
  await waitForWebhook(receiver, order.id, "order.dispute_resolved");
  // The indexer copies ReputationChanged in the block it indexes; wait for the admin view to match the chain.
  const afterState = await snapshot(order);
  await waitForSettled("the arbiter's transaction", async () => (await adminOrder(stack, order.id)).transactions);
  const detail = await adminOrder(stack, order.id);
  return { order, detail, before: beforeState, after: afterState };
}

const delta = (resolved: Resolved, name: string) => resolved.after.balances[name]! - resolved.before.balances[name]!;

describe("resolved for the buyer", () => {
  let resolved: Resolved;
  before(async () => {
    resolved = await resolveDispute({ by: "BUYER", buyerWallet: 1, outcome: "BUYER", finalStatus: "COMPLETED", note: "CEP shows the SPEI payment" });
  });

  test("the order ends COMPLETED with the arbiter's transaction as its release", () => {
    const { detail } = resolved;
    assert.equal(detail.status, "COMPLETED");
    const sent = detail.transactions.filter((tx) => tx.action === "resolveDispute");
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.signer, "arbiter");
    assert.equal(sent[0]!.status, "MINED");
    assert.deepEqual(sent[0]!.params, { outcome: "BUYER" });
    assert.equal(detail.releaseTxHash, sent[0]!.txHash);
    assert.equal(detail.escrow?.status, "Released");
  });

  test("the escrow pays the buyer the amount less the fee and credits the partner its fee less the service's share, the treasury the share", () => {
    const split = expectedSplit(resolved.order.amountRaw);
    assert.equal(delta(resolved, "buyer"), split.buyer);
    assert.equal(delta(resolved, "feeWallet"), split.partner);
    assert.equal(delta(resolved, "treasury"), split.treasury);
    assert.equal(delta(resolved, "feeWalletBalance"), 0n);
    assert.equal(delta(resolved, "treasuryBalance"), 0n);
    assert.equal(delta(resolved, "seller"), 0n);
    assert.equal(delta(resolved, "escrow"), -resolved.order.amountRaw);
  });

  test("the seller loses 50 reputation points on chain and the buyer none", () => {
    assert.equal(resolved.after.reputation.seller - resolved.before.reputation.seller, -50n);
    assert.equal(resolved.after.reputation.buyer - resolved.before.reputation.buyer, 0n);
  });

  test("the admin order detail shows both parties' reputation as the chain holds it", () => {
    const { detail } = resolved;
    assert.equal(detail.reputation.seller?.score, Number(resolved.after.reputation.seller));
    assert.equal(detail.reputation.buyer?.score, Number(resolved.after.reputation.buyer));
    assert.equal(detail.reputation.seller?.address, resolved.order.seller.toLowerCase());
  });

  test("GET /admin/v1/reputation/:address answers the seller's score", async () => {
    const response = await stack.service.admin<{ address: string; score: number }>("GET", `/reputation/${resolved.order.seller}`);
    assert.equal(response.status, 200);
    assert.equal(response.body.score, Number(resolved.after.reputation.seller));
  });

  test("order.disputed carries who opened it; order.dispute_resolved carries who opened it, the outcome and the release", () => {
    const hooks = webhooksOf(receiver, resolved.order.id);
    const disputed = hooks.find((hook) => hook.event === "order.disputed");
    assert.equal(disputed?.data.openedBy, "BUYER");
    assert.equal(disputed?.data.status, "DISPUTED");
    const resolvedHook = hooks.find((hook) => hook.event === "order.dispute_resolved");
    assert.equal(resolvedHook?.data.outcome, "BUYER");
    assert.equal(resolvedHook?.data.openedBy, "BUYER");
    assert.equal(resolvedHook?.data.status, "COMPLETED");
    assert.equal(resolvedHook?.data.releaseTxHash, resolved.detail.releaseTxHash);
  });

  test("the timeline records the outcome asked for with the operator's note, then the chain's resolution", () => {
    const events = resolved.detail.timeline.map((entry) => entry.event);
    const requested = resolved.detail.timeline.find((entry) => entry.event === "DISPUTE_RESOLUTION_REQUESTED");
    assert.deepEqual(requested?.data, { outcome: "BUYER", note: "CEP shows the SPEI payment" });
    assert.deepEqual(events.slice(events.indexOf("DISPUTED")), ["DISPUTED", "DISPUTE_RESOLUTION_REQUESTED", "DISPUTE_RESOLVED", "COMPLETED"]);
  });
});

describe("resolved for the seller", () => {
  let resolved: Resolved;
  before(async () => {
    resolved = await resolveDispute({ by: "SELLER", buyerWallet: 2, outcome: "SELLER", finalStatus: "REFUNDED" });
  });

  test("the order ends REFUNDED with the arbiter's transaction as its refund", () => {
    const sent = resolved.detail.transactions.filter((tx) => tx.action === "resolveDispute");
    assert.equal(resolved.detail.status, "REFUNDED");
    assert.equal(sent.length, 1);
    assert.equal(resolved.detail.refundTxHash, sent[0]!.txHash);
    assert.equal(resolved.detail.escrow?.status, "Refunded");
  });

  test("the escrow refunds the seller the whole amount; nobody else is paid", () => {
    assert.equal(delta(resolved, "seller"), resolved.order.amountRaw);
    assert.equal(delta(resolved, "buyer"), 0n);
    assert.equal(delta(resolved, "feeWallet"), 0n);
    assert.equal(delta(resolved, "treasury"), 0n);
  });

  test("the buyer loses 50 reputation points on chain and the seller none", () => {
    assert.equal(resolved.after.reputation.buyer - resolved.before.reputation.buyer, -50n);
    assert.equal(resolved.after.reputation.seller - resolved.before.reputation.seller, 0n);
    assert.equal(resolved.detail.reputation.buyer?.score, -50);
  });

  test("order.dispute_resolved (opened by the seller, outcome SELLER) comes before order.refunded with the refund hash", async () => {
    const hooks = await waitForWebhook(receiver, resolved.order.id, "order.refunded");
    assert.equal(hooks.find((hook) => hook.event === "order.disputed")?.data.openedBy, "SELLER");
    const events = hooks.map((hook) => hook.event);
    assert.deepEqual(events.slice(-2), ["order.dispute_resolved", "order.refunded"]);
    const [resolvedHook, refunded] = hooks.slice(-2);
    assert.equal(resolvedHook!.data.outcome, "SELLER");
    assert.equal(resolvedHook!.data.openedBy, "SELLER");
    assert.equal(refunded!.data.refundTxHash, resolved.detail.refundTxHash);
    assert.equal(refunded!.data.status, "REFUNDED");
  });
});

describe("no fault, released to the buyer", () => {
  let resolved: Resolved;
  before(async () => {
    resolved = await resolveDispute({ by: "BUYER", buyerWallet: 3, outcome: "NO_FAULT_RELEASE", finalStatus: "COMPLETED" });
  });

  test("the order ends COMPLETED and the escrow pays the same split as a confirmed payment", () => {
    const split = expectedSplit(resolved.order.amountRaw);
    assert.equal(resolved.detail.status, "COMPLETED");
    assert.equal(delta(resolved, "buyer"), split.buyer);
    assert.equal(delta(resolved, "feeWallet"), split.partner);
    assert.equal(delta(resolved, "treasury"), split.treasury);
  });

  test("nobody's reputation changes", () => {
    assert.deepEqual(resolved.after.reputation, resolved.before.reputation);
  });

  test("order.dispute_resolved carries the NO_FAULT_RELEASE outcome and who opened the dispute", () => {
    const hook = webhooksOf(receiver, resolved.order.id).find((candidate) => candidate.event === "order.dispute_resolved");
    assert.equal(hook?.data.outcome, "NO_FAULT_RELEASE");
    assert.equal(hook?.data.openedBy, "BUYER");
  });
});

describe("no fault, refunded to the seller", () => {
  let resolved: Resolved;
  before(async () => {
    resolved = await resolveDispute({ by: "SELLER", buyerWallet: 4, outcome: "NO_FAULT_REFUND", finalStatus: "REFUNDED" });
  });

  test("the order ends REFUNDED and the seller gets the whole amount back", () => {
    assert.equal(resolved.detail.status, "REFUNDED");
    assert.equal(delta(resolved, "seller"), resolved.order.amountRaw);
    assert.equal(delta(resolved, "buyer"), 0n);
  });

  test("nobody's reputation changes", () => {
    assert.deepEqual(resolved.after.reputation, resolved.before.reputation);
  });

  test("order.dispute_resolved carries the NO_FAULT_REFUND outcome, then order.refunded follows", async () => {
    const hooks = await waitForWebhook(receiver, resolved.order.id, "order.refunded");
    const resolvedHook = hooks.find((hook) => hook.event === "order.dispute_resolved");
    assert.equal(resolvedHook?.data.outcome, "NO_FAULT_REFUND");
    assert.equal(resolvedHook?.data.openedBy, "SELLER");
    assert.equal(hooks.at(-1)?.event, "order.refunded");
  });
});

describe("no fault, retry", () => {
  let order: DisputedOrder;
  let firstLockExpiresAt: string;
  let detail: AdminOrderDetail;
  let reputationBefore: { seller: bigint; buyer: bigint };
  let escrowBalanceBefore: bigint;
  before(async () => {
    order = await disputedOrder(stack, { by: "BUYER", buyerWallet: 5 });
    firstLockExpiresAt = (await adminOrder(stack, order.id)).lockExpiresAt!;
    reputationBefore = { seller: await chainReputation(stack, order.seller), buyer: await chainReputation(stack, order.buyer) };
    escrowBalanceBefore = await usdcBalance(stack, stack.deployment.escrowAddress);
    // Chain time moves in whole seconds: make sure the new window visibly starts later than the first.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await resolve(stack, order.id, "NO_FAULT_RETRY", "CEP portal outage; buyer may pay again");
    await waitForStatus(stack, order.id, "LOCKED");
    await waitForWebhook(receiver, order.id, "order.dispute_resolved");
    detail = await adminOrder(stack, order.id);
  });

  test("the order is LOCKED again with a new lock window starting at the resolution", () => {
    assert.equal(detail.status, "LOCKED");
    assert.ok(Date.parse(detail.lockExpiresAt!) > Date.parse(firstLockExpiresAt), `${detail.lockExpiresAt} after ${firstLockExpiresAt}`);
    const resolvedEntry = detail.timeline.find((entry) => entry.event === "DISPUTE_RESOLVED");
    assert.equal(resolvedEntry?.data.lockExpiresAt, detail.lockExpiresAt);
  });

  test("a new lock timer is scheduled for the new window", async () => {
    const { rows } = await stack.service.pool.query<{ start_after: Date }>(
      "SELECT start_after FROM pgboss.job WHERE name = 'orders.timer' AND data->>'orderId' = $1 AND data->>'timer' = 'LOCK_TIMEOUT' AND data->>'dueAt' = $2",
      [order.id, detail.lockExpiresAt],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.start_after.toISOString(), detail.lockExpiresAt);
  });

  test("the escrow still holds the order and nobody's reputation changes", async () => {
    assert.equal(detail.escrow?.status, "Locked");
    assert.equal(detail.escrow?.lockExpiresAt, detail.lockExpiresAt, "the escrow's view carries the new lock window");
    assert.equal(await usdcBalance(stack, stack.deployment.escrowAddress), escrowBalanceBefore);
    assert.deepEqual({ seller: await chainReputation(stack, order.seller), buyer: await chainReputation(stack, order.buyer) }, reputationBefore);
  });

  test("order.dispute_resolved carries NO_FAULT_RETRY, who opened the dispute and the new lockExpiresAt", () => {
    const hook = webhooksOf(receiver, order.id).find((candidate) => candidate.event === "order.dispute_resolved");
    assert.equal(hook?.data.outcome, "NO_FAULT_RETRY");
    assert.equal(hook?.data.openedBy, "BUYER");
    assert.equal(hook?.data.status, "LOCKED");
    assert.equal(hook?.data.lockExpiresAt, detail.lockExpiresAt);
  });

  test("the retried order can be disputed again, by the other side, and resolved", async () => {
    const dispute = await stack.service.api("POST", `/sandbox/orders/${order.id}/dispute`, { key: stack.partner.apiKey, body: { by: "SELLER" } });
    assert.equal(dispute.status, 200, JSON.stringify(dispute.body));
    await waitForStatus(stack, order.id, "DISPUTED");
    const second = await adminOrder(stack, order.id);
    assert.deepEqual(second.dispute, { openedBy: "SELLER", outcome: null, resolutionRequest: null });
    await resolve(stack, order.id, "SELLER");
    await waitForStatus(stack, order.id, "REFUNDED");
    const final = await adminOrder(stack, order.id);
    assert.equal(final.transactions.filter((tx) => tx.action === "resolveDispute").length, 2);
    const resolvedHooks = webhooksOf(receiver, order.id).filter((hook) => hook.event === "order.disputed");
    assert.deepEqual(resolvedHooks.map((hook) => hook.data.openedBy), ["BUYER", "SELLER"]);
  });
});
