// The buyer market's rules of issue 21 (decisions 17), on the service with an offline chain: orders are
// placed through the API and moved by the order machine's own events (as the indexer applies them), so
// the timeline and the columns are what a real trade leaves. The public book and what the buyer really
// receives, the trades' order within one second, lost disputes counted as lock expiries, and the daily
// cap of KYC sessions.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ensureBuyer } from "../../src/market/buyers.ts";
import { buyerPolicy } from "../../src/market/module.ts";
import type { OrderEvent } from "../../src/orders/machine.ts";
import { applyOrderEvent } from "../../src/orders/store.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import type { TestService } from "../support/service.ts";
import { placeOrder, SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";
import { market, type Json } from "./support.ts";

let service: TestService;
let partner: { id: string; apiKey: string; webhookSecret: string };
const stack = () => ({ service });

before(async () => {
  service = await startOfflineOrderService();
  partner = await service.createPartner({ name: "Market Rules Partner", tier: "ENTERPRISE" });
});
after(async () => {
  await service?.close();
});

const newWallet = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase();
const HOUR = 3_600_000;

/** A market session for `wallet`, as POST /auth/session stores it (the sign-in itself is market-api.test.ts's). */
async function sessionFor(wallet: string): Promise<string> {
  await ensureBuyer(service.pool, buyerPolicy(service.config), wallet);
  const token = `mks_${randomBytes(32).toString("hex")}`;
  await service.pool.query("INSERT INTO market_sessions (token_hash, wallet, expires_at) VALUES ($1, $2, now() + interval '1 hour')", [
    createHash("sha256").update(token).digest("hex"),
    wallet,
  ]);
  return token;
}

const apply = (orderId: string, event: OrderEvent) => applyOrderEvent(service.pool, orderEffectPorts(service.boss), orderId, event);

/** An order placed through the API and deposited (the indexer's DEPOSIT_CONFIRMED): ACTIVE, listed for an hour. */
async function listed(options: { amountUsdc?: number; feePercent?: number; ref?: string } = {}) {
  const order = await placeOrder(
    { service, partner },
    { amountUsdc: options.amountUsdc ?? 100, ...(options.feePercent ? { feePercent: options.feePercent } : {}), ...(options.ref ? { ref: options.ref } : {}) },
  );
  const at = new Date().toISOString();
  const result = await apply(order.id, { type: "DEPOSIT_CONFIRMED", txHash: "0xd0", seller: newWallet(), listingExpiresAt: new Date(Date.now() + HOUR).toISOString(), at });
  assert.equal(result.status, "ACTIVE");
  return order;
}

/** The order locked by `buyer` at `at` (a block's timestamp), its lock ending in an hour. */
async function locked(orderId: string, buyer: string, at: string) {
  const result = await apply(orderId, { type: "LOCKED", txHash: `0x${randomBytes(32).toString("hex")}`, buyer, lockExpiresAt: new Date(Date.now() + HOUR).toISOString(), at });
  assert.equal(result.status, "LOCKED");
}

test("the order book needs no token and never shows the CLABE, the partner or the user", async () => {
  const ref = `seller-${randomBytes(6).toString("hex")}`;
  const order = await listed({ ref });
  const book = await market<{ orders: Json[]; total: number }>(stack(), "GET", "/orders?limit=100");
  assert.equal(book.status, 200, JSON.stringify(book.body));
  const item = book.body.orders.find((entry) => entry.escrowOrderId === order.escrowOrderId);
  assert.ok(item, "listed to a visitor");
  const text = JSON.stringify(book.body);
  assert.equal(order.sellerClabe, SELLER_CLABE);
  for (const secret of [SELLER_CLABE, partner.id, ref, order.id]) assert.ok(!text.includes(secret), `no ${secret}`);
});

test("the book sorts by what the buyer pays per token received: a 10% fee order shows receiveAmount 90 and comes after a cheaper one", async () => {
  // The fee order asks 900 MXN for 100 tokens (9.00 a token sold) but the escrow releases 90 to the
  // buyer: 10.00 a token received. The other asks 950 MXN for 100 tokens, all released: 9.50.
  const withFee = await listed({ feePercent: 10 });
  const without = await listed();
  await service.pool.query("UPDATE orders SET total_mxn = 900 WHERE id = $1", [withFee.id]);
  await service.pool.query("UPDATE orders SET total_mxn = 950 WHERE id = $1", [without.id]);
  // Signed in or not, the same book.
  const book = await market<{ orders: Json[] }>(stack(), "GET", "/orders?limit=100", { token: await sessionFor(newWallet()) });
  const ids = book.body.orders.map((entry) => entry.escrowOrderId);
  const [fee, plain] = [book.body.orders[ids.indexOf(withFee.escrowOrderId)]!, book.body.orders[ids.indexOf(without.escrowOrderId)]!];
  assert.deepEqual([fee.amount, fee.receiveAmount, fee.pricePerUnit], [100, 90, 9]);
  assert.deepEqual([plain.amount, plain.receiveAmount, plain.pricePerUnit], [100, 100, 9.5]);
  assert.ok(ids.indexOf(without.escrowOrderId) < ids.indexOf(withFee.escrowOrderId), "the order cheaper for the buyer comes first");
  const costs = book.body.orders.map((entry) => Number(entry.totalMxn) / Number(entry.receiveAmount));
  assert.deepEqual(costs, [...costs].sort((a, b) => a - b), "cheapest for the buyer first throughout");
});

test("receiveAmount is the escrow's arithmetic: the fee in token units rounded down", async () => {
  // 12.345679 tokens at 10%: the fee is 1,234,567.9 units, rounded down to 1.234567; the buyer gets 11.111112.
  const order = await listed({ amountUsdc: 12.345679, feePercent: 10 });
  const book = await market<{ orders: Json[] }>(stack(), "GET", "/orders?limit=100", { token: await sessionFor(newWallet()) });
  const item = book.body.orders.find((entry) => entry.escrowOrderId === order.escrowOrderId)!;
  assert.deepEqual([item.amount, item.receiveAmount], [12.345679, 11.111112]);
});

test("GET /trades lists locks made in the same second in the chain's order, the latest first", async () => {
  const buyer = newWallet();
  const token = await sessionFor(buyer);
  const orders = [];
  for (let i = 0; i < 6; i++) orders.push(await listed());
  // One block: six Locked logs with one timestamp, applied in log order as the indexer reads them.
  const second = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
  for (const order of orders) await locked(order.id, buyer, second);
  const trades = await market<{ trades: Json[] }>(stack(), "GET", "/trades", { token });
  assert.equal(trades.status, 200);
  assert.deepEqual(
    trades.body.trades.map((trade) => trade.escrowOrderId),
    orders.map((order) => order.escrowOrderId).reverse(),
  );
});

test("a dispute the buyer opened and lost counts as an expired lock: two suspend; the seller's disputes and won ones do not count", async () => {
  const buyer = newWallet();
  const token = await sessionFor(buyer);
  const now = () => new Date().toISOString();
  const dispute = async (byBuyer: boolean, outcome: "SELLER" | "BUYER") => {
    const order = await listed();
    await locked(order.id, buyer, now());
    await apply(order.id, { type: "DISPUTE_OPENED", txHash: "0xd1", openedBy: byBuyer ? buyer : newWallet(), byBuyer, at: now() });
    const resolved = await apply(order.id, { type: "DISPUTE_RESOLVED", txHash: "0xd2", outcome, newLockExpiresAt: null, at: now() });
    assert.ok(resolved.changed);
  };
  const me = async () => (await market(stack(), "GET", "/me", { token })).body;

  await dispute(false, "SELLER");
  await dispute(true, "BUYER");
  assert.deepEqual([(await me()).expiredLocks30d, (await me()).status], [0, "ACTIVE"]);
  await dispute(true, "SELLER");
  assert.deepEqual([(await me()).expiredLocks30d, (await me()).status], [1, "ACTIVE"]);
  await dispute(true, "SELLER");
  const suspended = await me();
  assert.deepEqual([suspended.expiredLocks30d, suspended.status], [2, "SUSPENDED"]);
  const order = await listed();
  const permit = await market(stack(), "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token });
  assert.deepEqual([permit.status, permit.body.error], [403, "BUYER_SUSPENDED"]);

  // An operator's reinstatement forgives the lost disputes before it.
  const reinstated = await service.admin("PATCH", `/buyers/${buyer}`, { status: "ACTIVE" });
  assert.deepEqual([reinstated.status, reinstated.body.expiredLocks30d, reinstated.body.status], [200, 0, "ACTIVE"]);
});

test("a buyer starts at most 3 KYC sessions a day: the 4th is 429 RATE_LIMITED with Retry-After, and starts no provider session", async () => {
  const buyer = newWallet();
  const token = await sessionFor(buyer);
  const start = () => market(stack(), "POST", "/me/kyc", { token, body: { level: "BASIC", returnUrl: "http://localhost/back" } });
  for (let i = 0; i < 3; i++) assert.equal((await start()).status, 201);
  const fourth = await start();
  assert.deepEqual([fourth.status, fourth.body.error], [429, "RATE_LIMITED"]);
  const retryAfter = Number(fourth.headers.get("retry-after"));
  assert.ok(retryAfter > 23 * 3600 && retryAfter <= 24 * 3600, `Retry-After ${retryAfter}`);
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM buyer_kyc_sessions WHERE wallet = $1", [buyer]);
  assert.equal(Number(rows[0]!.n), 3);
  // Another buyer is not affected.
  const other = await sessionFor(newWallet());
  assert.equal((await market(stack(), "POST", "/me/kyc", { token: other, body: { level: "BASIC", returnUrl: "http://localhost/back" } })).status, 201);
});
