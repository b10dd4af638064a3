// Anti-griefing (decisions 17): at most BUYER_MAX_OPEN_LOCKS locks (and unexpired permits) per buyer,
// suspension after BUYER_MAX_EXPIRED_LOCKS unpaid lock expiries in 30 days, the operators' list and
// reinstatement, and the sandbox wallets' exemption (decisions 13). Real locks expiring on the local
// chain: a 15-second lock window keeps the test short.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { suspensionFromExpiries } from "../../src/market/buyers.ts";
import { startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { activeOrder, approveKyc, fund, lockWithPermit, market, signIn, type Buyer, type Json, type PermitAnswer } from "./support.ts";

let stack: TradeStack;
let buyer: Buyer;
before(async () => {
  stack = await startTradeStack({ LOCK_WINDOW_SECONDS: "15", BUYER_MAX_OPEN_LOCKS: "2", BUYER_MAX_EXPIRED_LOCKS: "2" });
  buyer = await signIn(stack);
  await approveKyc(stack, buyer);
  await fund(stack, buyer.account.address, { eth: 1, usdc: 0 });
});
after(async () => {
  await stack?.close();
});

const permit = (escrowOrderId: string, token = buyer.token) => market<PermitAnswer & Json>(stack, "POST", `/orders/${escrowOrderId}/lock-permit`, { token });

test("the suspension rule: the expiry that reaches the limit in 30 days suspends for 7 days from it", () => {
  const day = 86_400_000;
  const at = (days: number) => new Date(Date.UTC(2026, 0, 1) + days * day);
  assert.equal(suspensionFromExpiries([at(0)], 2), null);
  assert.deepEqual(suspensionFromExpiries([at(0), at(10)], 2), at(17));
  assert.equal(suspensionFromExpiries([at(0), at(31)], 2), null, "31 days apart: never two in 30 days");
  assert.deepEqual(suspensionFromExpiries([at(0), at(10), at(12)], 2), at(19), "a later expiry restarts the 7 days");
});

test("open locks and permits count against the limit; two expired locks suspend; an operator reinstates", async () => {
  const [a, b, c] = [await activeOrder(stack, 3), await activeOrder(stack, 4), await activeOrder(stack, 5)];
  const permitA = await permit(a.escrowOrderId);
  assert.equal(permitA.status, 201, JSON.stringify(permitA.body));
  await lockWithPermit(stack, buyer.account, permitA.body);
  await waitForStatus(stack, a.id, "LOCKED");
  const permitB = await permit(b.escrowOrderId);
  assert.equal(permitB.status, 201);
  // One lock and one unexpired permit for another order: the limit of 2 is reached.
  const refused = await permit(c.escrowOrderId);
  assert.deepEqual([refused.status, refused.body.error], [403, "LOCK_LIMIT_REACHED"]);
  // Asking again for the same order is not a second permit.
  assert.equal((await permit(b.escrowOrderId)).status, 201);
  await lockWithPermit(stack, buyer.account, permitB.body);
  await waitForStatus(stack, b.id, "LOCKED");
  assert.equal((await market(stack, "GET", "/me", { token: buyer.token })).body.openLocks, 2);

  // Neither is paid: both locks expire and are refunded.
  await waitForStatus(stack, a.id, "REFUNDED", 90_000);
  await waitForStatus(stack, b.id, "REFUNDED", 90_000);
  const me = await market(stack, "GET", "/me", { token: buyer.token });
  assert.equal(me.body.status, "SUSPENDED");
  assert.equal(me.body.expiredLocks30d, 2);
  assert.equal(me.body.openLocks, 0);
  const until = Date.parse(String(me.body.suspendedUntil)) - Date.now();
  assert.ok(until > 6.9 * 86_400_000 && until <= 7 * 86_400_000, `7 days: ${until}`);
  const suspended = await permit(c.escrowOrderId);
  assert.deepEqual([suspended.status, suspended.body.error], [403, "BUYER_SUSPENDED"]);
  // ORDER_NOT_AVAILABLE comes first.
  const expiredOrder = await permit(a.escrowOrderId);
  assert.deepEqual([expiredOrder.status, expiredOrder.body.error], [409, "ORDER_NOT_AVAILABLE"]);

  const list = await stack.service.admin<{ buyers: Json[]; total: number; limit: number; offset: number; hasMore: boolean }>("GET", "/buyers");
  assert.equal(list.status, 200);
  const listed = list.body.buyers.find((item) => item.wallet === buyer.account.address);
  assert.equal(listed?.status, "SUSPENDED");
  assert.equal(listed?.expiredLocks30d, 2);
  assert.deepEqual(Object.keys(list.body).sort(), ["buyers", "hasMore", "limit", "offset", "total"]);

  const shouted = `0x${buyer.account.address.slice(2).toUpperCase()}`;
  const reinstated = await stack.service.admin("PATCH", `/buyers/${shouted}`, { status: "ACTIVE" });
  assert.equal(reinstated.status, 200, JSON.stringify(reinstated.body));
  assert.equal(reinstated.body.status, "ACTIVE");
  assert.equal(reinstated.body.expiredLocks30d, 0, "expiries before the reinstatement are forgiven");
  assert.equal((await permit(c.escrowOrderId)).status, 201);

  const suspendedByOperator = await stack.service.admin("PATCH", `/buyers/${buyer.account.address}`, { status: "SUSPENDED" });
  assert.equal(suspendedByOperator.body.status, "SUSPENDED");
  assert.equal((await permit(c.escrowOrderId)).body.error, "BUYER_SUSPENDED");
  assert.equal((await stack.service.admin("PATCH", `/buyers/0x${"0".repeat(40)}`, { status: "ACTIVE" })).status, 404);
  assert.equal((await stack.service.admin("PATCH", `/buyers/${buyer.account.address}`, { status: "GONE" })).status, 400);
});

test("sandbox wallets are exempt from the lock limit: the sandbox helper locks many orders with one wallet", async () => {
  const orders = [await activeOrder(stack, 1), await activeOrder(stack, 2), await activeOrder(stack, 3)];
  for (const order of orders) {
    const locked = await stack.service.api("POST", `/sandbox/orders/${order.id}/lock`, { key: stack.partner.apiKey, body: { buyerWallet: 2 } });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
  }
  for (const order of orders) await waitForStatus(stack, order.id, "LOCKED");
  const wallet = await signIn(stack, (await import("viem/accounts")).privateKeyToAccount(sandboxAccounts[2]!.privateKey));
  const me = await market(stack, "GET", "/me", { token: wallet.token });
  assert.equal(me.body.openLocks, 3);
  assert.equal(me.body.kycStatus, "APPROVED");
});
