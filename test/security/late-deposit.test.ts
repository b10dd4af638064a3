// Decisions 19: a deposit that lands for an order already EXPIRED (its deposit timer) or cancelled is
// refunded to its depositor by the service: the escrow's service-only `cancel`, sent once, a timeline
// entry when it is asked and one when the chain shows the refund, the refund's transaction on the
// order, and the order's terminal status unchanged. On the real chain, indexer and service.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { parseEventLogs, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { applyOrderEvent } from "../../src/orders/store.ts";
import { placeOrder, startTradeStack, waitFor, waitForSettled, type TradeStack } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;
interface Detail extends Json {
  status: string;
  refundTxHash: string | null;
  escrowTxHash: string | null;
  timeline: { event: string; data: Json }[];
}
interface Deposit {
  escrowAddress: Address;
  tokenAddress: Address;
  amountRaw: string;
  terms: Record<string, string | number>;
  signature: Hex;
}

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(() => stack?.close());

const detail = async (id: string) => (await stack.service.api<Detail>("GET", `/orders/${id}`, { key: stack.partner.apiKey })).body;

/** What a seller's wallet does with the create response's `deposit`: mint, approve, deposit. */
async function depositFromWallet(deposit: Deposit, walletIndex: number): Promise<{ seller: Address; txHash: Hex; balanceBefore: bigint }> {
  const gateway = stack.service.chain!.gateway;
  const wallet = gateway.walletClient(privateKeyToAccount(sandboxAccounts[walletIndex]!.privateKey));
  const seller = wallet.account.address;
  const amount = BigInt(deposit.amountRaw);
  const mined = async (hash: Hex) => {
    const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash });
    assert.equal(receipt.status, "success");
    return hash;
  };
  await mined(await wallet.writeContract({ address: deposit.tokenAddress, abi: testUsdcAbi, functionName: "mint", args: [seller, amount], chain: gateway.chain }));
  await mined(await wallet.writeContract({ address: deposit.tokenAddress, abi: testUsdcAbi, functionName: "approve", args: [deposit.escrowAddress, amount], chain: gateway.chain }));
  const balanceBefore = await balance(seller);
  const t = deposit.terms;
  const terms = {
    orderId: t.orderId as Hex,
    token: t.token as Address,
    amount: BigInt(t.amount!),
    feeBps: Number(t.feeBps),
    feeRecipient: t.feeRecipient as Address,
    treasuryShareBps: Number(t.treasuryShareBps),
    depositDeadline: BigInt(t.depositDeadline!),
    listingWindow: BigInt(t.listingWindow!),
    lockWindow: BigInt(t.lockWindow!),
  };
  const txHash = await mined(await wallet.writeContract({ address: deposit.escrowAddress, abi: escrowAbi, functionName: "deposit", args: [terms, deposit.signature], chain: gateway.chain }));
  return { seller, txHash, balanceBefore };
}

const balance = (address: Address) =>
  stack.service.chain!.gateway.publicClient.readContract({ address: stack.deployment.usdcAddress, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });

async function refundedEvents(escrowOrderId: string) {
  const logs = await stack.service.chain!.gateway.publicClient.getLogs({ address: stack.deployment.escrowAddress, fromBlock: 0n });
  return parseEventLogs({ abi: escrowAbi, logs, eventName: "Refunded" }).filter((log) => (log.args as { orderId: string }).orderId.toLowerCase() === escrowOrderId.toLowerCase());
}

async function expectRefunded(order: { id: string; escrowOrderId: string }, deposited: { seller: Address; txHash: Hex; balanceBefore: bigint }, endedBy: string) {
  const refunded = await waitFor(
    "the late deposit's refund on the order",
    async () => {
      const body = await detail(order.id);
      return body.timeline.some((entry) => entry.event === "LATE_DEPOSIT_REFUNDED") ? body : undefined;
    },
    40_000,
  );
  assert.equal(refunded.status, "EXPIRED", "the terminal status never changes");
  assert.match(String(refunded.refundTxHash), /^0x[0-9a-f]{64}$/);
  assert.equal(refunded.escrowTxHash, deposited.txHash);
  const events = refunded.timeline.map((entry) => entry.event);
  assert.deepEqual(events, ["CREATED", "EXPIRED", "LATE_DEPOSIT_REFUND_REQUESTED", "LATE_DEPOSIT_REFUNDED"]);
  assert.equal(refunded.timeline[1]!.data.reason, endedBy);
  const requested = refunded.timeline[2]!.data;
  assert.equal(requested.txHash, deposited.txHash);
  assert.equal(String(requested.sellerWallet).toLowerCase(), deposited.seller.toLowerCase());
  assert.equal(refunded.timeline[3]!.data.refundTxHash, refunded.refundTxHash);

  // On chain: one Refunded event, in the refund transaction, and the depositor has its USDC back.
  const logs = await refundedEvents(order.escrowOrderId);
  assert.equal(logs.length, 1);
  assert.equal(logs[0]!.transactionHash, refunded.refundTxHash);
  assert.equal((logs[0]!.args as { seller: string }).seller.toLowerCase(), deposited.seller.toLowerCase());
  assert.equal(await balance(deposited.seller), deposited.balanceBefore, "the seller's balance is back to what it was before the deposit");
  assert.equal(await stack.service.chain!.gateway.escrowStatus(order.escrowOrderId as Hex), "Refunded");

  // Sent once, by the service, and no webhook beyond the order's own expiry.
  const rows = await waitForSettled("the cancel", async () => (await stack.service.pool.query<{ action: string; status: string; signer: string }>("SELECT action, status, signer FROM chain_transactions WHERE order_id = $1", [order.id])).rows);
  assert.deepEqual(rows, [{ action: "cancel", status: "MINED", signer: "service" }]);
  const hooks = await stack.service.pool.query<{ event_type: string }>("SELECT event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [order.id]);
  assert.deepEqual(hooks.rows.map((row) => row.event_type), ["order.created", "order.expired"]);
}

test("a deposit mined after a PENDING_DEPOSIT cancellation is refunded to its depositor; the order stays EXPIRED", async () => {
  const order = await placeOrder(stack);
  const cancel = await stack.service.api<Json>("POST", `/orders/${order.id}/cancel`, { key: stack.partner.apiKey });
  assert.equal(cancel.body.status, "EXPIRED");
  const deposited = await depositFromWallet(order.deposit as Deposit, 3);
  await expectRefunded(order, deposited, "CANCELLED");
});

test("a deposit mined before its on-chain deadline but indexed after the deposit timer expired the order is refunded", async () => {
  const order = await placeOrder(stack);
  // The deposit timer fires (as pg-boss would at expiresAt) before the indexer has seen the deposit.
  const fired = await applyOrderEvent(stack.service.pool, orderEffectPorts(stack.service.boss), order.id, {
    type: "TIMER_FIRED",
    timer: "DEPOSIT_TIMEOUT",
    dueAt: String(order.expiresAt),
    at: new Date().toISOString(),
  });
  assert.equal(fired.status, "EXPIRED");
  const deposited = await depositFromWallet(order.deposit as Deposit, 4);
  await expectRefunded(order, deposited, "DEPOSIT_TIMEOUT");
});
