// Decisions sections 14 and 15: the service grows past one machine as more instances on one database
// and one chain. Two service processes share the database, the chain and the indexer's schema; four
// clients (two per instance) run trades along every sandbox path at once, and one instance is killed
// (SIGKILL) mid-trade and started again. Every order must reach its path's end state, each escrow action
// must happen on chain exactly once per order, and the webhook receiver must get every event of every
// order, each sequence number once.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { SELLER_CLABE, spawnServiceProcess, startChainStack, waitFor, type ChainStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";
import { adminOrder, assertTransactionsOnce, call, escrowEventCounts, everyPath, expectedEnd, trade, waitForOrder, waitForStatus, type Client, type TradePath } from "./support.ts";


interface Instance {
  name: string;
  child: ChildProcess;
  baseUrl: string;
  alive: boolean;
}

let chainStack: ChainStack;
let pool: Pool;
let receiver: TestReceiver;
const children: ChildProcess[] = [];

before(async () => {
  chainStack = await startChainStack();
  pool = createPool(chainStack.databaseUrl, 3);
  receiver = await startReceiver();
});

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, "exit") : undefined)));
  await receiver?.close();
  await pool?.end();
  await chainStack?.close();
});

async function startInstance(name: string, env: Record<string, string> = {}): Promise<Instance> {
  const { child, baseUrl } = await spawnServiceProcess(chainStack, { WEBHOOK_RETRY_DELAYS_SECONDS: "1,2,3,5,8", WEBHOOK_TIMEOUT_MS: "5000", ...env }, 90_000);
  children.push(child);
  const instance: Instance = { name, child, baseUrl, alive: true };
  child.once("exit", () => (instance.alive = false));
  return instance;
}

test("two instances on one database and chain, one killed mid-trade: every order ends right, each action once, each webhook once", async () => {
  const instances: Instance[] = [await startInstance("A"), await startInstance("B")];
  const live = (preferred: number) => () => {
    const first = instances[preferred]!;
    return first.alive ? first.baseUrl : instances[1 - preferred]!.baseUrl;
  };
  const bootstrap: Client = { name: "admin", apiKey: "", adminToken: ADMIN_TOKEN, baseUrl: live(0) };
  const clients: Client[] = [];
  for (let i = 0; i < 4; i += 1) {
    const partner = await call<{ apiKey: string }>(bootstrap, "POST", "/partners", {
      admin: true,
      body: { name: `Instance partner ${i}`, tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", webhookUrl: receiver.url },
    });
    assert.equal(partner.status, 201, JSON.stringify(partner.body));
    clients.push({ name: `client-${i}`, apiKey: partner.body.apiKey, adminToken: ADMIN_TOKEN, baseUrl: live(i % 2) });
  }

  const paths: TradePath[] = [...everyPath(), "complete", "complete"];
  const started = Date.now();
  const running = paths.map((path, i) => trade(clients[i % clients.length]!, path, 1 + (i % 4)));
  const all = Promise.allSettled(running);

  // Mid-trade: once some orders are locked on chain, instance A dies without warning, then comes back.
  await waitFor("some orders to be locked", async () => {
    const { rows } = await pool.query<{ n: string }>("SELECT count(*) AS n FROM orders WHERE status IN ('LOCKED', 'DISPUTED', 'PENDING_RELEASE')");
    return Number(rows[0]!.n) >= 4 ? true : undefined;
  }, 120_000);
  const victim = instances[0]!;
  victim.child.kill("SIGKILL");
  await once(victim.child, "exit");
  assert.equal(victim.child.signalCode, "SIGKILL");
  const killedWallAt = Date.now();
  const killedAt = killedWallAt - started;
  await sleep(2_000);
  instances[0] = await startInstance("A again");

  const settled = await all;
  const failures = settled.filter((result) => result.status === "rejected").map((result) => String((result as PromiseRejectedResult).reason));
  assert.deepEqual(failures, [], "every trade reached its end");
  const trades = settled.map((result) => (result as PromiseFulfilledResult<Awaited<(typeof running)[number]>>).value);
  console.log(`# ${trades.length} trades on two instances in ${((Date.now() - started) / 1000).toFixed(1)} s; A killed at ${(killedAt / 1000).toFixed(1)} s`);

  for (const done of trades) {
    const expected = expectedEnd(done.path);
    assert.equal(done.status, expected.status, `${done.path} ${done.orderId}`);
    assert.deepEqual(await escrowEventCounts(pool, chainStack.indexerSchema, done.escrowOrderId), expected.events, `${done.path} ${done.orderId}: escrow events`);
    await assertTransactionsOnce(pool, done.orderId, 45_000);
  }

  // Webhooks: every event recorded for an order reaches the receiver, each sequence once. The one
  // exception the design allows (docs/webhooks.md: delivery is at least once) is an attempt in flight when
  // its instance was killed: the receiver got it, the outcome was never committed, and the restarted
  // delivery sends it again under the same X-Webhook-Id (receivers skip an id they have seen).
  let inFlightAtKill = 0;
  for (const done of trades) {
    const { rows } = await pool.query<{ sequence: number }>("SELECT sequence FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [done.orderId]);
    assert.deepEqual(rows.map((row) => row.sequence), rows.map((_, i) => i + 1), `${done.orderId}: sequences 1..n`);
    const copies = await waitFor(`the webhooks of ${done.orderId}`, async () => {
      const got = receiver.requests
        .map((request) => ({ request, body: JSON.parse(request.rawBody) as { data: { orderId: string; sequence: number } } }))
        .filter(({ body }) => body.data.orderId === done.orderId);
      return new Set(got.map(({ body }) => body.data.sequence)).size >= rows.length ? got : undefined;
    }, 60_000);
    for (const { sequence } of rows) {
      const same = copies.filter(({ body }) => body.data.sequence === sequence);
      if (same.length === 1) continue;
      const ids = new Set(same.map(({ request }) => String(request.headers["x-webhook-id"])));
      const first = Math.min(...same.map(({ request }) => request.receivedAt));
      const detail = same.map(({ request }) => `${request.receivedAt - killedWallAt} ms after the kill`).join(", ");
      assert.ok(same.length === 2 && ids.size === 1 && first <= killedWallAt && first > killedWallAt - 2_000, `${done.path} ${done.orderId}: sequence ${sequence} delivered ${same.length} times (${detail})`);
      inFlightAtKill += 1;
    }
  }
  console.log(`# webhooks: every sequence of every order delivered once${inFlightAtKill ? `, except ${inFlightAtKill} in flight at the kill, sent again under the same X-Webhook-Id` : ""}`);
  await adminOrder(bootstrap, trades[0]!.orderId);
});

// The sandbox's simulated SPEI payments must be seen by every instance: `pay` on one instance records the
// payment its CEP portal simulator serves, and the verification may run on the other (or the first may be
// gone). They used to live in the memory of the instance that took the `pay`: the other's portal never
// found them and the payment was rejected CEP_NOT_FOUND.
test("a sandbox payment taken by one instance is verified by the other after the first is killed", async () => {
  const payer = await startInstance("payer", { HOLD_QUEUES: "payments.verify" });
  const verifier = await startInstance("verifier");
  const onPayer: Client = { name: "payer", apiKey: "", adminToken: ADMIN_TOKEN, baseUrl: () => payer.baseUrl };
  const partner = await call<{ apiKey: string }>(onPayer, "POST", "/partners", { admin: true, body: { name: "Payer partner", tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" } });
  assert.equal(partner.status, 201);
  onPayer.apiKey = partner.body.apiKey;
  const onVerifier: Client = { ...onPayer, name: "verifier", baseUrl: () => verifier.baseUrl };

  const user = await call(onPayer, "POST", "/users", { body: { partnerUserRef: "payer-user" } });
  assert.equal(user.status, 201);
  const quote = await call<{ id: string }>(onPayer, "POST", "/quotes", { body: { type: "SELL", amountUsdc: 12, partnerUserRef: "payer-user" } });
  const created = await call<{ id: string }>(onPayer, "POST", "/orders", { body: { quoteId: quote.body.id, partnerUserRef: "payer-user", sellerClabe: SELLER_CLABE } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id;
  assert.equal((await call(onPayer, "POST", `/sandbox/orders/${id}/deposit`, { body: {} })).status, 200);
  await waitForStatus(onPayer, id, "ACTIVE");
  assert.equal((await call(onPayer, "POST", `/sandbox/orders/${id}/lock`, { body: { buyerWallet: 1 } })).status, 200);
  await waitForStatus(onPayer, id, "LOCKED");
  const paid = await call(onPayer, "POST", `/sandbox/orders/${id}/pay`, { body: {} });
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  payer.child.kill("SIGKILL");
  await once(payer.child, "exit");

  const done = await waitForOrder(onVerifier, id, "PENDING_RELEASE or COMPLETED", (detail) => ["PENDING_RELEASE", "COMPLETED"].includes(detail.status) || detail.timeline.some((entry) => entry.event === "PAYMENT_REJECTED"), 60_000);
  assert.deepEqual(done.timeline.filter((entry) => entry.event === "PAYMENT_REJECTED").map((entry) => entry.data), [], "the payment was not rejected");
  await waitForStatus(onVerifier, id, "COMPLETED", 60_000);
});
