import assert from "node:assert/strict";
import type { Address } from "viem";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { placeOrder, waitFor, type TradeStack } from "../support/trade-stack.ts";
import type { TestReceiver } from "../webhooks/support/receiver.ts";

// Helpers of the dispute tests: an order taken to DISPUTED through the sandbox routes (real transactions,
// the order following the indexer), on-chain reads, and the webhooks a real receiver got.

export interface DisputedOrder {
  id: string;
  escrowOrderId: string;
  seller: Address;
  buyer: Address;
  amountRaw: bigint;
}

/** Places an order, deposits, locks with `buyerWallet` and opens a dispute `by` one side; waits for DISPUTED. */
export async function disputedOrder(
  stack: TradeStack,
  options: { by: "BUYER" | "SELLER"; buyerWallet: number; amountUsdc?: number; feePercent?: number; feeRecipient?: string },
): Promise<DisputedOrder> {
  const order = await placeOrder(stack, {
    amountUsdc: options.amountUsdc ?? 100,
    ...(options.feePercent !== undefined ? { feePercent: options.feePercent, feeRecipient: options.feeRecipient ?? "PARTNER" } : {}),
  });
  return disputeOrder(stack, { id: order.id, escrowOrderId: order.escrowOrderId }, options);
}

/** Deposits, locks with `buyerWallet` and opens a dispute `by` one side on an order of `stack.partner`; waits for DISPUTED. */
export async function disputeOrder(
  stack: TradeStack,
  order: { id: string; escrowOrderId: string },
  options: { by: "BUYER" | "SELLER"; buyerWallet: number },
): Promise<DisputedOrder> {
  const key = stack.partner.apiKey;
  const deposit = await stack.service.api<{ sellerWallet: Address }>("POST", `/sandbox/orders/${order.id}/deposit`, { key });
  assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
  await waitForAdminStatus(stack, order.id, "ACTIVE");
  const lock = await stack.service.api<{ buyerWallet: Address }>("POST", `/sandbox/orders/${order.id}/lock`, { key, body: { buyerWallet: options.buyerWallet } });
  assert.equal(lock.status, 200, JSON.stringify(lock.body));
  const locked = await waitForAdminStatus(stack, order.id, "LOCKED");
  const dispute = await stack.service.api("POST", `/sandbox/orders/${order.id}/dispute`, { key, body: { by: options.by } });
  assert.equal(dispute.status, 200, JSON.stringify(dispute.body));
  await waitForAdminStatus(stack, order.id, "DISPUTED");
  return {
    id: order.id,
    escrowOrderId: order.escrowOrderId,
    seller: deposit.body.sellerWallet,
    buyer: lock.body.buyerWallet,
    amountRaw: BigInt(String(locked.amountRaw)),
  };
}

/**
 * Waits until the admin API shows the order in `status` (admin calls are not rate-limited, so polling
 * works for orders of FREE partners too); returns the admin detail.
 */
export async function waitForAdminStatus(stack: Pick<TradeStack, "service">, orderId: string, status: string, timeoutMs?: number): Promise<AdminOrderDetail> {
  return waitFor(
    `order ${orderId} to be ${status}`,
    async () => {
      const detail = await stack.service.admin<AdminOrderDetail>("GET", `/orders/${orderId}`);
      return detail.body.status === status ? detail.body : undefined;
    },
    timeoutMs,
  );
}

export async function usdcBalance(stack: TradeStack, address: Address): Promise<bigint> {
  return stack.service.chain!.gateway.publicClient.readContract({ address: stack.deployment.usdcAddress, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });
}

/** A fee share credited to `address` in the escrow and not yet withdrawn (pull payments, decisions 5). */
export async function escrowCredit(stack: TradeStack, address: Address): Promise<bigint> {
  return stack.service.chain!.gateway.publicClient.readContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: "accrued", args: [address, stack.deployment.usdcAddress] });
}

/** The escrow's USDC held for open orders: its balance less the credited, unwithdrawn fee shares. */
export async function escrowHeld(stack: TradeStack): Promise<bigint> {
  return stack.service.chain!.gateway.publicClient.readContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: "totalEscrowed", args: [stack.deployment.usdcAddress] });
}

/** The contract's own reputation score for an account (the truth the indexer copies). */
export async function chainReputation(stack: TradeStack, address: Address): Promise<bigint> {
  return stack.service.chain!.gateway.publicClient.readContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: "reputation", args: [address] });
}

export interface Webhook {
  event: string;
  timestamp: string;
  data: Record<string, unknown> & { orderId: string; status: string; sequence: number };
}

/** The webhooks the receiver got for one order, in sequence order. */
export function webhooksOf(receiver: TestReceiver, orderId: string): Webhook[] {
  return receiver.requests
    .map((request) => JSON.parse(request.rawBody) as Webhook)
    .filter((payload) => payload.data.orderId === orderId)
    .sort((a, b) => a.data.sequence - b.data.sequence);
}

/** Waits until the receiver has got `eventType` for the order; returns every webhook of the order. */
export async function waitForWebhook(receiver: TestReceiver, orderId: string, eventType: string): Promise<Webhook[]> {
  return waitFor(`${eventType} for ${orderId}`, async () => {
    const hooks = webhooksOf(receiver, orderId);
    return hooks.some((hook) => hook.event === eventType) ? hooks : undefined;
  });
}

/** Reads the admin order detail. */
export async function adminOrder(stack: TradeStack, orderId: string) {
  const response = await stack.service.admin<AdminOrderDetail>("GET", `/orders/${orderId}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

export interface AdminOrderDetail {
  id: string;
  status: string;
  amountRaw: string;
  lockExpiresAt: string | null;
  releaseTxHash: string | null;
  refundTxHash: string | null;
  dispute: { openedBy: string; outcome: string | null; resolutionRequest: { outcome: string; note: string | null; requestedAt: string } | null } | null;
  timeline: { id: string; event: string; data: Record<string, unknown>; timestamp: string }[];
  transactions: { id: string; action: string; params: Record<string, unknown>; status: string; txHash: string | null; signer: string }[];
  reputation: { seller: { address: string; score: number } | null; buyer: { address: string; score: number } | null };
  escrow: { status: string; lockExpiresAt: string | null; payout: { buyerUsdc: number; feeUsdc: number; treasuryUsdc: number } | null } | null;
  path: { state: string; event: string | null }[];
  machine: { value: string; context: Record<string, unknown>; version: number };
  deliveries: { id: string; eventType: string; status: string; sequence: number }[];
}

/** Resolves through the admin API and expects 200. */
export async function resolve(stack: TradeStack, orderId: string, outcome: string, note?: string) {
  const response = await stack.service.admin<AdminOrderDetail>("POST", `/orders/${orderId}/resolve`, note === undefined ? { outcome } : { outcome, note });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}
