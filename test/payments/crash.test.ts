// Decision 15 for the release: the service is killed (SIGKILL) after PAYMENT_VERIFIED has committed and
// before the release transaction is sent; once restarted it sends that transaction exactly once and the
// order completes. The service runs in a child process on a real chain, indexer and database.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { after, before, test } from "node:test";
import type { Address } from "viem";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { CHAIN_SEND_QUEUE } from "../../src/jobs/queues.ts";
import { ADMIN_TOKEN, type ApiResponse } from "../support/service.ts";
import { spawnServiceProcess, startChainStack, type ChainStack } from "../support/trade-stack.ts";
import { chainTransactions, settledChainTransactions, indexedEvents, lockedOrder, sandbox, usdcBalance, waitForStatus, waitForTimeline, type Json, type PaymentStack } from "./support/payments.ts";


let chainStack: ChainStack;
let pool: Pool;
const children: ChildProcess[] = [];

before(async () => {
  chainStack = await startChainStack();
  pool = createPool(chainStack.databaseUrl, 3);
});

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, "exit") : undefined)));
  await pool?.end();
  await chainStack?.close();
});

/** Starts the service in a child process on this test's database, chain and indexer. */
async function startServiceProcess(env: Record<string, string> = {}): Promise<{ child: ChildProcess; baseUrl: string }> {
  const started = await spawnServiceProcess(chainStack, env, 60_000);
  children.push(started.child);
  return started;
}

async function call<T = Json>(baseUrl: string, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<ApiResponse<T>> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };
}

test("killed after the payment is verified and before the release is sent, the restarted service releases exactly once", async () => {
  // The first instance's chain.send worker is stopped: the release it enqueues stays unsent.
  const first = await startServiceProcess({ HOLD_QUEUES: CHAIN_SEND_QUEUE });
  let baseUrl = first.baseUrl;
  const partner = await call<{ apiKey: string }>(baseUrl, "POST", "/admin/v1/partners", { Authorization: `Bearer ${ADMIN_TOKEN}` }, { name: "Crash partner", tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" });
  assert.equal(partner.status, 201, JSON.stringify(partner.body));
  const stack: PaymentStack = {
    service: { api: (method, url, options = {}) => call(baseUrl, method, `/api/v1${url}`, options.key ? { "X-API-Key": options.key } : {}, options.body), pool },
    partner: { apiKey: partner.body.apiKey },
  };

  const order = await lockedOrder(stack);
  const buyerBefore = await usdcBalance(chainStack.chainSettings.rpcUrl, chainStack.chainSettings.usdcAddress as Address, order.buyerWallet!);
  const paid = await sandbox<{ trackingKey: string }>(stack, order.id, "pay");
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  await waitForTimeline(stack, order.id, "PAYMENT_VERIFIED");
  const pending = await waitForStatus(stack, order.id, "PENDING_RELEASE");
  assert.equal(pending.cepTrackingKey, paid.body.trackingKey);
  assert.deepEqual(await chainTransactions(pool, order.id), [{ action: "confirmPayment", status: "PENDING", tx_hash: null }], "the release is recorded, not sent");

  first.child.kill("SIGKILL");
  await once(first.child, "exit");
  assert.equal(first.child.signalCode, "SIGKILL");
  assert.deepEqual(await indexedEvents(pool, chainStack.indexerSchema, order.escrowOrderId, "Released"), [], "nothing was released before the crash");

  const second = await startServiceProcess();
  baseUrl = second.baseUrl;
  const completed = await waitForStatus(stack, order.id, "COMPLETED", 60_000);
  const released = await indexedEvents(pool, chainStack.indexerSchema, order.escrowOrderId, "Released");
  assert.deepEqual(released.map((event) => event.transaction_hash), [completed.releaseTxHash], "one Released event, from the recorded transaction");
  assert.deepEqual(await settledChainTransactions(pool, order.id), [{ action: "confirmPayment", status: "MINED", tx_hash: completed.releaseTxHash }]);
  const buyerAfter = await usdcBalance(chainStack.chainSettings.rpcUrl, chainStack.chainSettings.usdcAddress as Address, order.buyerWallet!);
  assert.equal(buyerAfter - buyerBefore, BigInt(order.amountRaw), "the buyer was paid once");
  assert.equal(completed.timeline.filter((entry) => entry.event === "PAYMENT_VERIFIED").length, 1);
});
