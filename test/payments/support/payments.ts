// Shared steps of the payment-proof tests: an order driven to LOCKED through the real chain and
// indexer, reports signed like a buyer's wallet signs them, and reads of what the service recorded.
import assert from "node:assert/strict";
import { createPublicClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../../src/chain/escrow-abi.ts";
import { eventTable } from "../../../src/sync/indexer-tables.ts";
import { sandboxAccounts } from "../../../src/stack/local-node.ts";
import type { Pool } from "../../../src/db/pool.ts";
import { paymentReportMessage } from "../../../src/payments/report.ts";
import type { ApiResponse } from "../../support/service.ts";
import { SELLER_CLABE, waitFor, waitForSettled } from "../../support/trade-stack.ts";

export type Json = Record<string, unknown>;

export interface TimelineEntry {
  event: string;
  data: Json;
  timestamp: string;
}

export interface OrderDetail extends Json {
  id: string;
  status: string;
  escrowOrderId: string;
  totalMxn: number;
  amountRaw: string;
  buyerWallet: string | null;
  lockedAt: string | null;
  lockExpiresAt: string | null;
  cepTrackingKey: string | null;
  cepValidatedAt: string | null;
  releaseTxHash: string | null;
  completedAt: string | null;
  timeline: TimelineEntry[];
}

/** What a payment test needs of a running service: its API, its database and the partner's key. */
export interface PaymentStack {
  service: { api<T = Json>(method: string, path: string, options?: { key?: string; body?: unknown }): Promise<ApiResponse<T>>; pool: Pool };
  partner: { apiKey: string };
}

export function sandbox<T = Json>(stack: PaymentStack, orderId: string, action: string, body: Json = {}) {
  return stack.service.api<T>("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey, body });
}

export async function orderDetail(stack: PaymentStack, orderId: string): Promise<OrderDetail> {
  const response = await stack.service.api<OrderDetail>("GET", `/orders/${orderId}`, { key: stack.partner.apiKey });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

export async function waitForStatus(stack: PaymentStack, orderId: string, status: string, timeoutMs = 30_000): Promise<OrderDetail> {
  return waitFor(
    `order ${orderId} to be ${status}`,
    async () => {
      const detail = await orderDetail(stack, orderId);
      return detail.status === status ? detail : undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits until the order's payment is verified: PENDING_RELEASE, or COMPLETED already, since the release
 * can follow the verification within milliseconds (a poll for PENDING_RELEASE alone may never see it).
 */
export async function waitForVerified(stack: PaymentStack, orderId: string, timeoutMs = 30_000): Promise<OrderDetail> {
  return waitFor(
    `order ${orderId} to have its payment verified`,
    async () => {
      const detail = await orderDetail(stack, orderId);
      const verified = detail.timeline.some((entry) => entry.event === "PAYMENT_VERIFIED");
      return verified && (detail.status === "PENDING_RELEASE" || detail.status === "COMPLETED") ? detail : undefined;
    },
    timeoutMs,
  );
}

/** A new user's order of `amountUsdc` (default 20) to the test seller's CLABE, in PENDING_DEPOSIT. */
export async function placeOrder(stack: PaymentStack, amountUsdc = 20): Promise<OrderDetail> {
  const key = stack.partner.apiKey;
  const ref = `buyer-test-${Math.random().toString(36).slice(2, 10)}`;
  const user = await stack.service.api("POST", "/users", { key, body: { partnerUserRef: ref } });
  assert.equal(user.status, 201, JSON.stringify(user.body));
  const quote = await stack.service.api<{ id: string }>("POST", "/quotes", { key, body: { type: "SELL", amountUsdc, partnerUserRef: ref } });
  assert.equal(quote.status, 201, JSON.stringify(quote.body));
  const order = await stack.service.api<{ id: string }>("POST", "/orders", { key, body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE } });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  return orderDetail(stack, order.body.id);
}

// The sandbox wallets send one transaction at a time: concurrent tests take turns to deposit and lock.
let walletTurn: Promise<unknown> = Promise.resolve();
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const run = walletTurn.then(work, work);
  walletTurn = run.catch(() => undefined);
  return run;
}

/** An order deposited and locked on chain (buyer: sandbox wallet `buyerWallet`, default 1), seen LOCKED. */
export function lockedOrder(stack: PaymentStack, options: { buyerWallet?: number; amountUsdc?: number } = {}): Promise<OrderDetail> {
  return inTurn(() => lockOrder(stack, options));
}

async function lockOrder(stack: PaymentStack, options: { buyerWallet?: number; amountUsdc?: number }): Promise<OrderDetail> {
  const order = await placeOrder(stack, options.amountUsdc);
  const deposit = await sandbox(stack, order.id, "deposit");
  assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
  await waitForStatus(stack, order.id, "ACTIVE");
  const lock = await sandbox(stack, order.id, "lock", options.buyerWallet === undefined ? {} : { buyerWallet: options.buyerWallet });
  assert.equal(lock.status, 200, JSON.stringify(lock.body));
  return waitForStatus(stack, order.id, "LOCKED");
}

/** The sandbox wallet's account (index into sandboxAccounts). */
export function sandboxWallet(index: number) {
  const account = sandboxAccounts[index];
  assert.ok(account, `no sandbox wallet ${index}`);
  return privateKeyToAccount(account.privateKey);
}

export interface ReportFields {
  trackingKey: string;
  operationDate: string;
  senderBankCode: string;
  amountMxn?: number;
}

/** Signs a report the way a buyer's wallet does (EIP-191 personal_sign of the documented message). */
export async function signedReport(order: Pick<OrderDetail, "escrowOrderId" | "totalMxn">, fields: ReportFields, signerIndex: number): Promise<Json> {
  const amount = (fields.amountMxn ?? order.totalMxn).toFixed(2);
  const message = paymentReportMessage({
    escrowOrderId: order.escrowOrderId,
    trackingKey: fields.trackingKey,
    operationDate: fields.operationDate,
    senderBankCode: fields.senderBankCode,
    amountMxn: amount,
  });
  const signature = await sandboxWallet(signerIndex).signMessage({ message });
  return { ...fields, signature };
}

export function report(stack: PaymentStack, orderId: string, body: unknown) {
  return stack.service.api<Json>("POST", `/orders/${orderId}/payment`, { key: stack.partner.apiKey, body });
}

/** Waits until the order's timeline has an entry `event` (matching `where`); returns it. */
export async function waitForTimeline(stack: PaymentStack, orderId: string, event: string, where: (entry: TimelineEntry) => boolean = () => true, timeoutMs = 30_000) {
  return waitFor(
    `${event} on order ${orderId}`,
    async () => (await orderDetail(stack, orderId)).timeline.find((entry) => entry.event === event && where(entry)),
    timeoutMs,
  );
}

export async function outboxEvents(pool: Pool, orderId: string): Promise<{ event_type: string; sequence: number; data: Json }[]> {
  const { rows } = await pool.query<{ event_type: string; sequence: number; body: string }>(
    "SELECT event_type, sequence, body FROM webhook_events WHERE order_id = $1 ORDER BY sequence",
    [orderId],
  );
  return rows.map((row) => ({ event_type: row.event_type, sequence: row.sequence, data: (JSON.parse(row.body) as { data: Json }).data }));
}

export async function chainTransactions(pool: Pool, orderId: string): Promise<{ action: string; status: string; tx_hash: string | null }[]> {
  const { rows } = await pool.query<{ action: string; status: string; tx_hash: string | null }>(
    "SELECT action, status, tx_hash FROM chain_transactions WHERE order_id = $1 ORDER BY created_at",
    [orderId],
  );
  return rows;
}

/** The order's chain transactions once the sender has settled them (see waitForSettled), for checking their outcome. */
export async function settledChainTransactions(pool: Pool, orderId: string): Promise<{ action: string; status: string; tx_hash: string | null }[]> {
  return waitForSettled(`order ${orderId}'s transactions`, () => chainTransactions(pool, orderId));
}

/** Escrow logs named `eventName` for this escrow order, as the indexer recorded them. */
export async function indexedEvents(pool: Pool, indexerSchema: string, escrowOrderId: string, eventName: string): Promise<{ transaction_hash: string }[]> {
  const { rows } = await pool.query<{ transaction_hash: string }>(
    `SELECT transaction_hash FROM ${eventTable(indexerSchema)} WHERE event_name = $1 AND lower(order_id) = lower($2) ORDER BY block_number, log_index`,
    [eventName, escrowOrderId],
  );
  return rows;
}

export async function usdcBalance(rpcUrl: string, token: Address, holder: string): Promise<bigint> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  return client.readContract({ address: token, abi: testUsdcAbi, functionName: "balanceOf", args: [holder as Address] });
}

/** The Mexico City calendar date of an instant (how a buyer names the day they paid). */
export function mexicoCityDate(instant: Date | string): string {
  return new Intl.DateTimeFormat("en-CA", { timeZone: "America/Mexico_City", year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date(instant));
}

export type { Hex };
