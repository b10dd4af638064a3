// Decisions sections 13 and 15: many trades at once through the sandbox routes, along every path the
// sandbox can drive (completion; cancellation of PENDING_DEPOSIT and of ACTIVE orders; a dispute opened
// by the buyer and by the seller, each resolved with each outcome through the admin route; a payment of
// the wrong amount, rejected, the order staying LOCKED), from four clients at once sharing the sandbox
// wallets. Every order must end in its path's state with each escrow event on chain exactly once and
// each of its chain transactions mined once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ADMIN_TOKEN } from "../support/service.ts";
import { startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { assertTransactionsOnce, escrowEventCounts, everyPath, expectedEnd, trade, type Client, type TradePath } from "./support.ts";

const CLIENTS = 4;
const BUYER_WALLETS = [1, 2, 3, 4];

let stack: TradeStack;
let clients: Client[];

before(async () => {
  stack = await startTradeStack();
  const partners = [stack.partner];
  for (let i = 1; i < CLIENTS; i += 1) partners.push(await stack.service.createPartner({ tier: "ENTERPRISE" }));
  clients = partners.map((partner, i) => ({ name: `client-${i}`, apiKey: partner.apiKey, adminToken: ADMIN_TOKEN, baseUrl: () => stack.service.baseUrl }));
});

after(async () => {
  await stack?.close();
});

test("dozens of sandbox trades at once along every path end right, each on-chain action once", async () => {
  const paths: TradePath[] = [...everyPath(), ...everyPath(), "complete", "complete", "complete", "complete"];
  const started = Date.now();
  const trades = await Promise.all(paths.map((path, i) => trade(clients[i % CLIENTS]!, path, BUYER_WALLETS[i % BUYER_WALLETS.length]!)));
  const tookMs = Date.now() - started;

  const pool = stack.service.pool;
  for (const done of trades) {
    const expected = expectedEnd(done.path);
    assert.equal(done.status, expected.status, `${done.path} ${done.orderId}`);
    // The indexer has caught up with the end state; give it the events of that block too.
    assert.deepEqual(await escrowEventCounts(pool, stack.indexerSchema, done.escrowOrderId), expected.events, `${done.path} ${done.orderId}: escrow events`);
    await assertTransactionsOnce(pool, done.orderId);
  }
  const rejected = trades.filter((done) => done.path === "wrong-amount");
  for (const done of rejected) assert.ok(done.detail.timeline.some((entry) => entry.event === "PAYMENT_REJECTED" && entry.data.reason === "AMOUNT_TOO_LOW"), `${done.orderId} rejected for its amount`);
  const { rows } = await pool.query<{ n: string }>("SELECT count(*) AS n FROM orders");
  assert.equal(Number(rows[0]!.n), paths.length);
  console.log(`# ${paths.length} trades from ${CLIENTS} clients in ${(tookMs / 1000).toFixed(1)} s, checked in ${((Date.now() - started - tookMs) / 1000).toFixed(1)} s`);
});
