// Whole trades along the main paths, through the partner, sandbox and admin APIs as a partner and an
// operator drive them: the representative set the chain-condition tests run (an interval-mined chain with
// confirmations, an erring or failing RPC). Each returns the order's final detail.
import assert from "node:assert/strict";
import { placeOrder, waitForStatus, type TradeStack } from "./trade-stack.ts";

type Stack = Pick<TradeStack, "service" | "partner">;
type Detail = Awaited<ReturnType<typeof waitForStatus>>;

async function step(stack: Stack, orderId: string, action: string, body: Record<string, unknown> = {}): Promise<void> {
  const response = await stack.service.api("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey, body });
  assert.equal(response.status, 200, `${action}: ${response.status} ${JSON.stringify(response.body)}`);
}

/** Deposited and confirmed: the order is ACTIVE. */
export async function activeOrder(stack: Stack, timeoutMs?: number): Promise<string> {
  const order = await placeOrder(stack);
  await step(stack, order.id, "deposit");
  await waitForStatus(stack, order.id, "ACTIVE", timeoutMs);
  return order.id;
}

/** Deposit, lock, SPEI payment with its CEP: COMPLETED. */
export async function completedTrade(stack: Stack, timeoutMs?: number): Promise<Detail> {
  const id = await activeOrder(stack, timeoutMs);
  await step(stack, id, "lock");
  await waitForStatus(stack, id, "LOCKED", timeoutMs);
  await step(stack, id, "pay");
  return waitForStatus(stack, id, "COMPLETED", timeoutMs);
}

/** Deposit, then the partner cancels: the escrow refunds the seller, REFUNDED. */
export async function cancelledTrade(stack: Stack, timeoutMs?: number): Promise<Detail> {
  const id = await activeOrder(stack, timeoutMs);
  const cancel = await stack.service.api("POST", `/orders/${id}/cancel`, { key: stack.partner.apiKey });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  return waitForStatus(stack, id, "REFUNDED", timeoutMs);
}

/** No deposit before DEPOSIT_TIMEOUT_SECONDS: EXPIRED. */
export async function depositExpiry(stack: Stack, timeoutMs?: number): Promise<Detail> {
  const order = await placeOrder(stack);
  return waitForStatus(stack, order.id, "EXPIRED", timeoutMs);
}

/** Deposit, lock, no payment within LOCK_WINDOW_SECONDS: the lock-expiry refund, REFUNDED. */
export async function lockExpiry(stack: Stack, timeoutMs?: number): Promise<Detail> {
  const id = await activeOrder(stack, timeoutMs);
  await step(stack, id, "lock");
  await waitForStatus(stack, id, "LOCKED", timeoutMs);
  return waitForStatus(stack, id, "REFUNDED", timeoutMs);
}

/** Deposit, lock, the buyer disputes, the operator resolves for the buyer: COMPLETED. */
export async function disputedTrade(stack: Stack, timeoutMs?: number): Promise<Detail> {
  const id = await activeOrder(stack, timeoutMs);
  await step(stack, id, "lock");
  await waitForStatus(stack, id, "LOCKED", timeoutMs);
  await step(stack, id, "dispute", { by: "BUYER" });
  await waitForStatus(stack, id, "DISPUTED", timeoutMs);
  const resolve = await stack.service.admin("POST", `/orders/${id}/resolve`, { outcome: "BUYER" });
  assert.equal(resolve.status, 200, JSON.stringify(resolve.body));
  return waitForStatus(stack, id, "COMPLETED", timeoutMs);
}
