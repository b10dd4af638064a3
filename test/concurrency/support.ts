// Trades driven along every path the sandbox can drive, for the concurrency tests: each path is a
// function of a client (a partner's key on a service's base URL) that takes a fresh order to its end
// state through the public and sandbox routes (the admin route for dispute resolutions), waiting for the
// order to move (as it moves only when the indexer has seen the chain) between steps.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { eventTable } from "../../src/sync/indexer-tables.ts";
import type { Pool } from "../../src/db/pool.ts";
import { OpenApiMismatchError } from "../support/openapi-check.ts";
import { SELLER_CLABE, waitForSettled } from "../support/trade-stack.ts";

export type Json = Record<string, unknown>;

export interface Client {
  name: string;
  apiKey: string;
  adminToken: string;
  /** The service to call now (a test may move its clients to another instance). */
  baseUrl(): string;
}

export interface Answer<T = Json> {
  status: number;
  body: T;
}

/**
 * One HTTP call. A request that reaches no server (an instance killed under it) is tried again, on
 * whatever `baseUrl()` then says; POSTs that create or cancel carry an Idempotency-Key, so a retry
 * after a lost answer does not act twice.
 */
export async function call<T = Json>(client: Client, method: string, path: string, options: { body?: unknown; admin?: boolean; idempotencyKey?: string } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = options.admin ? { Authorization: `Bearer ${client.adminToken}` } : { "X-API-Key": client.apiKey };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  for (let attempt = 1; ; attempt += 1) {
    try {
      const response = await fetch(`${client.baseUrl()}${options.admin ? "/admin/v1" : "/api/v1"}${path}`, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
    } catch (error) {
      // An answer the OpenAPI document does not describe is a finding, not a lost answer to retry.
      if (attempt >= 40 || error instanceof OpenApiMismatchError) throw error;
      await sleep(250);
    }
  }
}

export interface AdminDetail extends Json {
  id: string;
  status: string;
  escrowOrderId: string;
  totalMxn: number;
  timeline: { event: string; data: Json }[];
  transactions: { action: string; status: string; txHash: string | null }[];
}

export async function adminOrder(client: Client, orderId: string): Promise<AdminDetail> {
  const response = await call<AdminDetail>(client, "GET", `/orders/${orderId}`, { admin: true });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

/** Polls the admin view (not rate-limited) until `done` holds; returns that detail. */
export async function waitForOrder(client: Client, orderId: string, what: string, done: (detail: AdminDetail) => boolean, timeoutMs = 90_000): Promise<AdminDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const detail = await adminOrder(client, orderId);
    if (done(detail)) return detail;
    if (Date.now() > deadline) throw new Error(`order ${orderId}: timed out waiting for ${what}; it is ${detail.status}, timeline ${detail.timeline.map((entry) => entry.event).join(" ")}, transactions ${detail.transactions.map((tx) => `${tx.action} ${tx.status} ${tx.txHash ?? "unsigned"}`).join(", ") || "none"}`);
    await sleep(250);
  }
}

export const waitForStatus = (client: Client, orderId: string, status: string, timeoutMs?: number) =>
  waitForOrder(client, orderId, status, (detail) => detail.status === status, timeoutMs);

export const DISPUTE_OUTCOMES = ["BUYER", "SELLER", "NO_FAULT_RELEASE", "NO_FAULT_REFUND", "NO_FAULT_RETRY"] as const;

export type TradePath =
  | "complete"
  | "cancel-pending"
  | "cancel-active"
  | "wrong-amount"
  | `dispute-by-${"BUYER" | "SELLER"}-${(typeof DISPUTE_OUTCOMES)[number]}`;

export function everyPath(): TradePath[] {
  const disputes = (["BUYER", "SELLER"] as const).flatMap((by) => DISPUTE_OUTCOMES.map((outcome) => `dispute-by-${by}-${outcome}` as const));
  return ["complete", "cancel-pending", "cancel-active", "wrong-amount", ...disputes];
}

/** The end state of each path, and the escrow events (name: count) its order must have on chain. */
export function expectedEnd(path: TradePath): { status: string; events: Record<string, number> } {
  const deposited = { Deposited: 1 };
  const locked = { ...deposited, Locked: 1 };
  switch (path) {
    case "complete":
      return { status: "COMPLETED", events: { ...locked, Released: 1 } };
    case "cancel-pending":
      return { status: "EXPIRED", events: {} };
    case "cancel-active":
      return { status: "REFUNDED", events: { ...deposited, Refunded: 1 } };
    case "wrong-amount":
      return { status: "LOCKED", events: locked };
  }
  const disputed = { ...locked, DisputeOpened: 1, DisputeResolved: 1 };
  if (path.endsWith("-NO_FAULT_RETRY")) return { status: "LOCKED", events: disputed };
  if (path.endsWith("-BUYER") || path.endsWith("-NO_FAULT_RELEASE")) return { status: "COMPLETED", events: { ...disputed, Released: 1 } };
  return { status: "REFUNDED", events: { ...disputed, Refunded: 1 } };
}

export interface Trade {
  path: TradePath;
  client: string;
  orderId: string;
  escrowOrderId: string;
  status: string;
  detail: AdminDetail;
}

let counter = 0;

/** Takes a new order along `path` (the buyer: sandbox wallet `buyerWallet`); returns its end. */
export async function trade(client: Client, path: TradePath, buyerWallet: number): Promise<Trade> {
  counter += 1;
  const tag = `${path}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  const ref = `conc-${tag}`;
  const ok = (answer: Answer, step: string) => assert.ok(answer.status === 200 || answer.status === 201, `${path} ${step}: ${answer.status} ${JSON.stringify(answer.body)}`);

  ok(await call(client, "POST", "/users", { body: { partnerUserRef: ref }, idempotencyKey: `u-${tag}` }), "user");
  const quote = await call<{ id: string }>(client, "POST", "/quotes", { body: { type: "SELL", amountUsdc: 10 + (counter % 7), partnerUserRef: ref }, idempotencyKey: `q-${tag}` });
  ok(quote, "quote");
  const order = await call<{ id: string; escrowOrderId: string }>(client, "POST", "/orders", {
    body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE },
    idempotencyKey: `o-${tag}`,
  });
  ok(order, "order");
  const id = order.body.id;
  const end = async (): Promise<Trade> => {
    const expected = expectedEnd(path).status;
    const detail = await waitForStatus(client, id, expected);
    return { path, client: client.name, orderId: id, escrowOrderId: order.body.escrowOrderId, status: detail.status, detail };
  };

  /** A sandbox or admin action; after a lost answer its effect is judged by the order's state. */
  /** `then`: the statuses that show the step took effect (PENDING_RELEASE may pass to COMPLETED before a poll sees it). */
  const act = async (step: string, request: () => Promise<Answer>, then: string[]) => {
    const answer = await request();
    if (answer.status === 200) return answer;
    // A 409 after a retry means the first attempt's transaction went through (the chain refuses the
    // second): the order then reaches `then` once the indexer has applied it.
    assert.equal(answer.status, 409, `${path} ${step}: ${answer.status} ${JSON.stringify(answer.body)}`);
    const now = await waitForOrder(client, id, then.join(" or "), (detail) => then.includes(detail.status), 20_000).catch(async () => adminOrder(client, id));
    assert.ok(then.includes(now.status), `${path} ${step}: ${answer.status} ${JSON.stringify(answer.body)} (order ${now.status})`);
    return answer;
  };
  const sandbox = (action: string, body: Json = {}) => () => call(client, "POST", `/sandbox/orders/${id}/${action}`, { body });

  if (path === "cancel-pending") {
    ok(await call(client, "POST", `/orders/${id}/cancel`, { idempotencyKey: `c-${tag}` }), "cancel");
    return end();
  }
  await act("deposit", sandbox("deposit"), ["ACTIVE"]);
  await waitForStatus(client, id, "ACTIVE");
  if (path === "cancel-active") {
    ok(await call(client, "POST", `/orders/${id}/cancel`, { idempotencyKey: `c-${tag}` }), "cancel");
    return end();
  }
  await act("lock", sandbox("lock", { buyerWallet }), ["LOCKED"]);
  const locked = await waitForStatus(client, id, "LOCKED");
  if (path === "complete") {
    await act("pay", sandbox("pay"), ["PENDING_RELEASE", "COMPLETED"]);
    return end();
  }
  if (path === "wrong-amount") {
    const paid = await call<{ trackingKey: string }>(client, "POST", `/sandbox/orders/${id}/pay`, { body: { amountMxn: Number((locked.totalMxn - 1).toFixed(2)) } });
    ok(paid, "pay");
    const rejected = await waitForOrder(client, id, "PAYMENT_REJECTED", (detail) => detail.timeline.some((entry) => entry.event === "PAYMENT_REJECTED"));
    const reasons = rejected.timeline.filter((entry) => entry.event === "PAYMENT_REJECTED").map((entry) => entry.data.reason);
    assert.deepEqual(reasons, ["AMOUNT_TOO_LOW"], `${path} ${id}: rejected for its amount (the portal found the payment)`);
    return end();
  }
  const [, by, outcome] = /^dispute-by-(BUYER|SELLER)-(.+)$/.exec(path)!;
  await act("dispute", sandbox("dispute", { by }), ["DISPUTED"]);
  await waitForStatus(client, id, "DISPUTED");
  await act("resolve", () => call(client, "POST", `/orders/${id}/resolve`, { admin: true, body: { outcome } }), [expectedEnd(path).status]);
  if (outcome === "NO_FAULT_RETRY") {
    await waitForOrder(client, id, "the dispute's resolution", (detail) => detail.status === "LOCKED" && detail.timeline.some((entry) => entry.event === "DISPUTE_RESOLVED"));
  }
  return end();
}

/** The escrow events the indexer recorded for an escrow order, counted by name. */
export async function escrowEventCounts(pool: Pool, indexerSchema: string, escrowOrderId: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ event_name: string; n: string }>(
    `SELECT event_name, count(*) AS n FROM ${eventTable(indexerSchema)} WHERE lower(order_id) = lower($1) AND event_name <> 'ReputationChanged' GROUP BY event_name`,
    [escrowOrderId],
  );
  return Object.fromEntries(rows.map((row) => [row.event_name, Number(row.n)]));
}

/**
 * Each order's chain transactions, once settled (waitForSettled says why it waits): every one MINED, no
 * action twice. After a kill, give it `timeoutMs` for a job the dead instance held to come back (its
 * missed heartbeat and the supervisor's sweep, 10 s each, src/jobs/queues.ts).
 */
export async function assertTransactionsOnce(pool: Pool, orderId: string, timeoutMs?: number): Promise<void> {
  const rows = await waitForSettled(`order ${orderId}'s transactions`, async () => (await pool.query<{ action: string; status: string; request_key: string }>("SELECT action, status, request_key FROM chain_transactions WHERE order_id = $1", [orderId])).rows, timeoutMs);
  for (const row of rows) assert.equal(row.status, "MINED", `order ${orderId}: ${row.action} is ${row.status}`);
  const keys = rows.map((row) => row.request_key);
  assert.equal(new Set(keys).size, keys.length);
}
