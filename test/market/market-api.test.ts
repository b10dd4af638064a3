// The market API of decisions 17 over the real chain and indexer: wallet sign-in, the buyer, KYC, the
// order book, lock permits and their refusals, the buyer's trade through to COMPLETED, the payment
// concept, and the sandbox chain and faucet helpers of decisions 13.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { privateKeyToAccount } from "viem/accounts";
import { startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { chainReputation, disputedOrder, resolve, waitForAdminStatus } from "../disputes/support.ts";
import { activeOrder, approveKyc, fund, lockWithPermit, market, newWallet, signIn, type Buyer, type Json, type PermitAnswer } from "./support.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(async () => {
  await stack?.close();
});

describe("sign-in", () => {
  test("a signed challenge opens a session whose token works until signed out", async () => {
    const account = newWallet();
    const challenge = await market<{ message: string; expiresAt: string }>(stack, "POST", "/auth/challenge", { body: { address: account.address.toLowerCase() } });
    assert.equal(challenge.status, 201);
    const host = new URL(stack.service.baseUrl).host;
    assert.ok(challenge.body.message.startsWith(`${host} wants you to sign in with your Ethereum account:\n${account.address}\n`), challenge.body.message);
    assert.match(challenge.body.message, /Chain ID: 31337/);
    const ttl = Date.parse(challenge.body.expiresAt) - Date.now();
    assert.ok(ttl > 290_000 && ttl <= 300_000, `5 minutes: ${ttl}`);

    const signature = await account.signMessage({ message: challenge.body.message });
    const session = await market<{ token: string; wallet: string; expiresAt: string }>(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature } });
    assert.equal(session.status, 201, JSON.stringify(session.body));
    assert.match(session.body.token, /^mks_[0-9a-f]{64}$/);
    assert.equal(session.body.wallet, account.address);
    const life = Date.parse(session.body.expiresAt) - Date.now();
    assert.ok(life > 86_390_000 && life <= 86_400_000);

    const stored = await stack.service.pool.query<{ token_hash: string }>("SELECT token_hash FROM market_sessions");
    assert.ok(stored.rows.every((row) => !row.token_hash.includes(session.body.token.slice(4))), "only a hash is stored");

    // The same message again: the nonce is used up.
    const again = await market(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature } });
    assert.equal(again.status, 401);
    assert.equal(again.body.error, "INVALID_SIGNATURE");

    const me = await market(stack, "GET", "/me", { token: session.body.token });
    assert.equal(me.status, 200);
    const signOut = await market(stack, "DELETE", "/auth/session", { token: session.body.token });
    assert.equal(signOut.status, 204);
    const after = await market(stack, "GET", "/me", { token: session.body.token });
    assert.equal(after.status, 401);
    assert.equal(after.body.error, "UNAUTHORIZED");
  });

  test("another wallet's signature, an altered message, an unknown nonce: 401 INVALID_SIGNATURE", async () => {
    const account = newWallet();
    const challenge = await market<{ message: string }>(stack, "POST", "/auth/challenge", { body: { address: account.address } });
    const other = await newWallet().signMessage({ message: challenge.body.message });
    const wrongSigner = await market(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature: other } });
    assert.deepEqual([wrongSigner.status, wrongSigner.body.error], [401, "INVALID_SIGNATURE"]);

    const altered = challenge.body.message.replace("Sign in to the Offramp market.", "Sign in to something else.");
    const alteredSignature = await account.signMessage({ message: altered });
    const alteredAnswer = await market(stack, "POST", "/auth/session", { body: { message: altered, signature: alteredSignature } });
    assert.deepEqual([alteredAnswer.status, alteredAnswer.body.error], [401, "INVALID_SIGNATURE"]);

    const forged = challenge.body.message.replace(/Nonce: \w+/, "Nonce: abcdefgh12345678");
    const forgedAnswer = await market(stack, "POST", "/auth/session", { body: { message: forged, signature: await account.signMessage({ message: forged }) } });
    assert.deepEqual([forgedAnswer.status, forgedAnswer.body.error], [401, "INVALID_SIGNATURE"]);

    // The right signature still works after the refusals (they did not use the nonce up).
    const good = await market(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature: await account.signMessage({ message: challenge.body.message }) } });
    assert.equal(good.status, 201);
  });

  test("an expired challenge is refused", async () => {
    const account = newWallet();
    const challenge = await market<{ message: string }>(stack, "POST", "/auth/challenge", { body: { address: account.address } });
    await stack.service.pool.query("UPDATE market_nonces SET expires_at = now() - interval '1 second' WHERE wallet = $1", [account.address.toLowerCase()]);
    const answer = await market(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature: await account.signMessage({ message: challenge.body.message }) } });
    assert.deepEqual([answer.status, answer.body.error], [401, "INVALID_SIGNATURE"]);
  });

  test("every other route but the order book needs a session: 401 UNAUTHORIZED, unknown paths included", async () => {
    for (const [method, path] of [["GET", "/me"], ["POST", "/orders"], ["GET", "/trades"], ["POST", "/orders/0x00/lock-permit"], ["GET", "/nothing-here"], ["GET", "/ME"]] as const) {
      const answer = await market(stack, method, path);
      assert.deepEqual([answer.status, answer.body.error], [401, "UNAUTHORIZED"], `${method} ${path}`);
    }
    const bad = await market(stack, "GET", "/me", { token: `mks_${"0".repeat(64)}` });
    assert.equal(bad.status, 401);
  });

  test("two Authorization lines are 401 UNAUTHORIZED even when both hold open sessions", async () => {
    // Node keeps the first line and drops the other; a proxy in front may have read the other one.
    const [first, second] = [await signIn(stack), await signIn(stack)];
    const url = new URL(`${stack.service.baseUrl}/market/v1/me`);
    const status = await new Promise<number>((resolve, reject) => {
      const request = http.request({ host: url.hostname, port: url.port, path: url.pathname, headers: { Authorization: [`Bearer ${first.token}`, `Bearer ${second.token}`] } }, (response) => {
        response.resume();
        resolve(response.statusCode!);
      });
      request.on("error", reject);
      request.end();
    });
    assert.equal(status, 401);
    assert.equal((await market(stack, "GET", "/me", { token: first.token })).status, 200);
  });

  test("the market's OpenAPI document is served", async () => {
    const response = await fetch(`${stack.service.baseUrl}/market/v1/openapi.json`);
    assert.equal(response.status, 200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, Json> };
    assert.equal(document.openapi, "3.1.0");
    for (const path of ["/auth/challenge", "/auth/session", "/me", "/me/kyc", "/orders", "/orders/{escrowOrderId}/lock-permit", "/trades", "/trades/{escrowOrderId}", "/trades/{escrowOrderId}/payment"]) {
      assert.ok(document.paths[path], path);
    }
    assert.ok(document.paths["/auth/session"]!.delete);
  });
});

describe("the buyer", () => {
  test("a new buyer is NOT_REQUIRED / NONE, ACTIVE, with nothing locked; KYC through the provider approves it", async () => {
    const buyer = await signIn(stack);
    const me = await market(stack, "GET", "/me", { token: buyer.token });
    assert.deepEqual(me.body, {
      wallet: buyer.account.address,
      status: "ACTIVE",
      kycStatus: "NOT_REQUIRED",
      kycTier: "NONE",
      reputation: 0,
      openLocks: 0,
      completedTrades: 0,
      expiredLocks30d: 0,
      monthlyVolumeMxn: 0,
      suspendedUntil: null,
      kycCompletedAt: null,
      createdAt: me.body.createdAt,
    });
    const badUrl = await market(stack, "POST", "/me/kyc", { token: buyer.token, body: { level: "BASIC", returnUrl: "ftp://x" } });
    assert.equal(badUrl.status, 400);
    const session = await market<{ sessionId: string; sessionUrl: string }>(stack, "POST", "/me/kyc", { token: buyer.token, body: { level: "FULL", returnUrl: "http://localhost/back" } });
    assert.equal(session.status, 201);
    assert.ok(session.body.sessionUrl.startsWith("http"));
    assert.equal((await market(stack, "GET", "/me", { token: buyer.token })).body.kycStatus, "PENDING");
    // Another buyer cannot decide it.
    const other = await signIn(stack);
    const foreign = await market(stack, "POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { token: other.token, body: { result: "APPROVED" } });
    assert.equal(foreign.status, 404);
    const decided = await market(stack, "POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { token: buyer.token, body: { result: "APPROVED" } });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.kycStatus, "APPROVED");
    assert.equal(decided.body.kycTier, "FULL");
  });
});

describe("order book, permits and a trade", () => {
  let buyer: Buyer;
  let order: Awaited<ReturnType<typeof activeOrder>>;
  before(async () => {
    buyer = await signIn(stack);
    await fund(stack, buyer.account.address, { eth: 1, usdc: 0 });
    order = await activeOrder(stack, 20);
  });

  test("the order book lists ACTIVE orders cheapest first, with no CLABE, partner or user", async () => {
    const second = await activeOrder(stack, 10);
    const book = await market<{ orders: Json[]; total: number; limit: number; offset: number; hasMore: boolean }>(stack, "GET", "/orders?limit=100", { token: buyer.token });
    assert.equal(book.status, 200);
    const mine = book.body.orders.find((item) => item.escrowOrderId === order.escrowOrderId);
    assert.ok(mine, "listed");
    assert.deepEqual(Object.keys(mine).sort(), ["amount", "bankCode", "bankName", "escrowOrderId", "listingExpiresAt", "pricePerUnit", "receiveAmount", "sellerReputation", "token", "totalMxn"]);
    assert.equal(mine.amount, 20);
    assert.equal(mine.receiveAmount, 20, "no partner fee on chain: the buyer receives the amount");
    assert.equal(mine.totalMxn, order.totalMxn);
    assert.equal(mine.bankCode, "012");
    assert.equal(mine.listingExpiresAt, order.expiresAt);
    assert.equal(mine.sellerReputation, 0);
    assert.ok(!JSON.stringify(book.body).includes(String((order.bankAccount as Json).clabe)), "no CLABE");
    const prices = book.body.orders.map((item) => Number(item.totalMxn) / Number(item.receiveAmount));
    assert.deepEqual(prices, [...prices].sort((a, b) => a - b));
    assert.equal(book.body.hasMore, false);
    const filtered = await market<{ orders: Json[] }>(stack, "GET", "/orders?minAmount=15&bankCode=012", { token: buyer.token });
    assert.ok(filtered.body.orders.every((item) => Number(item.amount) >= 15));
    assert.ok(!filtered.body.orders.some((item) => item.escrowOrderId === second.escrowOrderId));
    const none = await market<{ orders: Json[]; total: number }>(stack, "GET", "/orders?bankCode=002", { token: buyer.token });
    assert.equal(none.body.total, 0);
    assert.equal((await market(stack, "GET", "/orders?bankCode=abc", { token: buyer.token })).status, 400);
  });

  test("permit refusals: NOT_FOUND, KYC_REQUIRED before KYC, ORDER_NOT_AVAILABLE for the seller; USER_SANCTIONED for a listed wallet", async () => {
    const missing = await market(stack, "POST", `/orders/0x${"ab".repeat(32)}/lock-permit`, { token: buyer.token });
    assert.deepEqual([missing.status, missing.body.error], [404, "NOT_FOUND"]);
    const unverified = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: buyer.token });
    assert.deepEqual([unverified.status, unverified.body.error], [403, "KYC_REQUIRED"]);
    const seller = await signIn(stack, privateKeyToAccount(sandboxAccounts[0]!.privateKey));
    const own = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: seller.token });
    assert.deepEqual([own.status, own.body.error], [409, "ORDER_NOT_AVAILABLE"]);
    const sanctioned = await signIn(stack, privateKeyToAccount(sandboxAccounts[5]!.privateKey));
    const listed = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: sanctioned.token });
    assert.deepEqual([listed.status, listed.body.error], [403, "USER_SANCTIONED"]);
  });

  test("a KYC-approved buyer gets a permit, locks with its wallet, pays with the concept and follows the trade to COMPLETED", async () => {
    await approveKyc(stack, buyer, "BASIC");
    const started = Date.now();
    const permit = await market<PermitAnswer>(stack, "POST", `/orders/${order.escrowOrderId.toUpperCase().replace("0X", "0x")}/lock-permit`, { token: buyer.token });
    assert.equal(permit.status, 201, JSON.stringify(permit.body));
    assert.equal(permit.body.permit.orderId, order.escrowOrderId);
    assert.equal(permit.body.permit.buyer, buyer.account.address);
    assert.equal(typeof permit.body.permit.deadline, "number");
    const ttl = permit.body.permit.deadline - Math.floor(Date.now() / 1000);
    assert.ok(ttl > 110 && ttl <= 120, `2 minutes: ${ttl}`);
    assert.equal(permit.body.escrowAddress, stack.deployment.escrowAddress);
    assert.equal(permit.body.chainId, 31337);

    // Another wallet cannot use it: the escrow takes it only from `buyer`.
    const thief = newWallet();
    await fund(stack, thief.address, { eth: 1, usdc: 0 });
    await assert.rejects(lockWithPermit(stack, thief, permit.body));

    await lockWithPermit(stack, buyer.account, permit.body);
    await waitForStatus(stack, order.id, "LOCKED");

    const trade = await market<Json & { payment: Json; paymentReport: unknown; timeline: Json[] }>(stack, "GET", `/trades/${order.escrowOrderId}`, { token: buyer.token });
    assert.equal(trade.status, 200);
    assert.equal(trade.body.status, "LOCKED");
    assert.deepEqual(trade.body.payment, { clabe: (order.bankAccount as Json).clabe, bankName: (order.bankAccount as Json).bankName, bankCode: "012", amountMxn: order.totalMxn, concept: order.paymentConcept });
    assert.match(String(order.paymentConcept), /^OFR\d{7}$/);
    assert.equal(trade.body.paymentReport, null);
    assert.ok(trade.body.lockedAt && trade.body.lockExpiresAt);
    const other = await signIn(stack);
    assert.equal((await market(stack, "GET", `/trades/${order.escrowOrderId}`, { token: other.token })).status, 404);
    assert.equal((await market(stack, "POST", `/trades/${order.escrowOrderId}/payment`, { token: other.token, body: { trackingKey: "X1", operationDate: "2026-01-01", senderBankCode: "90646" } })).status, 404);
    const list = await market<{ trades: Json[]; total: number }>(stack, "GET", "/trades?status=LOCKED", { token: buyer.token });
    assert.deepEqual(list.body.trades.map((item) => item.escrowOrderId), [order.escrowOrderId]);
    const me = await market(stack, "GET", "/me", { token: buyer.token });
    assert.equal(me.body.openLocks, 1);
    const taken = await market(stack, "POST", `/orders/${order.escrowOrderId}/lock-permit`, { token: other.token });
    assert.deepEqual([taken.status, taken.body.error], [409, "ORDER_NOT_AVAILABLE"]);

    // A transfer without the concept: the CEP check rejects it and the order stays LOCKED.
    const wrong = await market<Json>(stack, "POST", `/sandbox/trades/${order.escrowOrderId}/spei`, { token: buyer.token, body: { concept: "" } });
    assert.equal(wrong.status, 200, JSON.stringify(wrong.body));
    const badReport = await market<Json>(stack, "POST", `/trades/${order.escrowOrderId}/payment`, {
      token: buyer.token,
      body: { trackingKey: wrong.body.trackingKey, operationDate: wrong.body.operationDate, senderBankCode: wrong.body.senderBankCode },
    });
    assert.equal(badReport.status, 202, JSON.stringify(badReport.body));
    const rejected = await waitFor("the concept mismatch", async () => {
      const detail = await market<{ paymentReport: Json | null; timeline: Json[] }>(stack, "GET", `/trades/${order.escrowOrderId}`, { token: buyer.token });
      return detail.body.paymentReport?.verification === "REJECTED" ? detail.body : undefined;
    }, 30_000);
    const entry = rejected.timeline.find((item) => item.event === "PAYMENT_REJECTED")!;
    assert.equal((entry.data as Json).reason, "CONCEPT_MISMATCH");

    // The right transfer, reported: verified, released, COMPLETED.
    const paid = await market<Json>(stack, "POST", `/sandbox/trades/${order.escrowOrderId}/spei`, { token: buyer.token, body: {} });
    assert.deepEqual(Object.keys(paid.body).sort(), ["amountMxn", "concept", "operationDate", "senderBankCode", "trackingKey"]);
    assert.equal(paid.body.concept, order.paymentConcept);
    assert.equal((await market(stack, "POST", `/trades/${order.escrowOrderId}/payment`, { token: buyer.token, body: { trackingKey: "bad key!", operationDate: "x", senderBankCode: "1" } })).status, 400);
    const reported = await market<Json & { paymentReport: Json }>(stack, "POST", `/trades/${order.escrowOrderId}/payment`, {
      token: buyer.token,
      body: { trackingKey: paid.body.trackingKey, operationDate: paid.body.operationDate, senderBankCode: paid.body.senderBankCode },
    });
    assert.equal(reported.status, 202, JSON.stringify(reported.body));
    assert.deepEqual(Object.keys(reported.body).sort(), ["escrowOrderId", "paymentReport", "status"]);
    assert.deepEqual(Object.keys(reported.body.paymentReport).sort(), ["amountMxn", "operationDate", "senderBankCode", "senderBankName", "trackingKey", "verification"]);
    await waitForStatus(stack, order.id, "COMPLETED", 60_000);
    const elapsed = Date.now() - started;
    console.log(`# market trade, permit to COMPLETED: ${elapsed} ms`);
    const done = await market<Json & { paymentReport: Json }>(stack, "GET", `/trades/${order.escrowOrderId}`, { token: buyer.token });
    assert.equal(done.body.status, "COMPLETED");
    assert.equal(done.body.paymentReport.verification, "VERIFIED");
    const late = await market(stack, "POST", `/trades/${order.escrowOrderId}/payment`, {
      token: buyer.token,
      body: { trackingKey: paid.body.trackingKey, operationDate: paid.body.operationDate, senderBankCode: paid.body.senderBankCode },
    });
    assert.deepEqual([late.status, late.body.error], [409, "INVALID_STATE"]);
    const profile = await market(stack, "GET", "/me", { token: buyer.token });
    assert.equal(profile.body.completedTrades, 1);
    assert.equal(profile.body.openLocks, 0);
    assert.equal(profile.body.monthlyVolumeMxn, order.totalMxn);
  });
});

describe("sandbox chain helpers", () => {
  test("GET /sandbox/chain and POST /sandbox/faucet fund a developer's wallet", async () => {
    const chain = await stack.service.api("GET", "/sandbox/chain", { key: stack.partner.apiKey });
    assert.deepEqual(chain.body, { rpcUrl: stack.chainSettings.rpcUrl, chainId: 31337, escrowAddress: stack.deployment.escrowAddress, usdcAddress: stack.deployment.usdcAddress });
    const wallet = newWallet();
    const funded = await stack.service.api("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address: wallet.address } });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    assert.equal(funded.body.ethBalance, "1");
    assert.equal(funded.body.usdcBalance, "1000");
    const many = await Promise.all([1, 2, 3].map(() => stack.service.api("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address: wallet.address, eth: 0.5, usdc: 1 } })));
    assert.deepEqual(many.map((answer) => answer.status), [200, 200, 200]);
    // Amounts JavaScript prints in exponent form (1e-18, 1e-7) are read exactly, not answered 500 (found by npm run fuzz).
    const tiny = await stack.service.api("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address: newWallet().address, eth: 1e-18, usdc: 0.000001 } });
    assert.equal(tiny.status, 200, JSON.stringify(tiny.body));
    assert.deepEqual([tiny.body.ethBalance, tiny.body.usdcBalance], ["0.000000000000000001", "0.000001"]);
    const bad = await stack.service.api("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address: "0x123" } });
    assert.equal(bad.status, 400);
    assert.equal((await stack.service.api("GET", "/sandbox/chain")).status, 401);
  });

  test("the sandbox lock helper goes through the permit issuance (a permit is recorded)", async () => {
    const order = await activeOrder(stack, 5);
    const locked = await stack.service.api("POST", `/sandbox/orders/${order.id}/lock`, { key: stack.partner.apiKey });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    const { rows } = await stack.service.pool.query("SELECT wallet FROM lock_permits WHERE order_id = $1", [order.id]);
    assert.deepEqual(rows, [{ wallet: sandboxAccounts[1]!.address.toLowerCase() }]);
  });
});

describe("the buyer's view of a held order", () => {
  test("a sanctions hold and the operator's decision never reach the buyer: only buyer-facing events and fields", async () => {
    // Sandbox wallet 5 is on the sandbox sanctions list; the sandbox lock helper lets it lock so the hold can be tried.
    const order = await activeOrder(stack, 9);
    const key = stack.partner.apiKey;
    const locked = await stack.service.api("POST", `/sandbox/orders/${order.id}/lock`, { key, body: { buyerWallet: 5 } });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    await waitForStatus(stack, order.id, "LOCKED");
    const paid = await stack.service.api("POST", `/sandbox/orders/${order.id}/pay`, { key, body: {} });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const operatorNote = "Listed wallet; compliance officer cleared the payment after a call";
    await waitFor("the held payment", async () => {
      const detail = await stack.service.admin<{ timeline: { event: string }[] }>("GET", `/orders/${order.id}`);
      return detail.body.timeline.some((entry) => entry.event === "PAYMENT_VERIFIED_HELD") ? true : undefined;
    }, 30_000);
    const buyer = await signIn(stack, privateKeyToAccount(sandboxAccounts[5]!.privateKey));
    const allowed = ["LOCKED", "PAYMENT_REPORTED", "PAYMENT_VERIFIED", "PAYMENT_REJECTED", "LOCK_EXPIRY_MOVED", "LOCK_EXPIRY_REFUND_DEFERRED", "LOCK_EXPIRY_REFUND_REQUESTED", "LOCK_EXPIRED", "DISPUTED", "DISPUTE_RESOLVED", "COMPLETED", "REFUNDED"];
    const assertNothingOfTheHold = (trade: Json & { timeline: { event: string; data: Json }[] }) => {
      const text = JSON.stringify(trade);
      for (const secret of ["SANCTIONS_HOLD", "SANDBOX SANCTIONED WALLET", "HOLD_DECIDED", "PAYMENT_VERIFIED_HELD", "releasedAfterHold", "listEntry", operatorNote]) {
        assert.ok(!text.includes(secret), `the buyer sees ${secret}: ${text}`);
      }
      for (const entry of trade.timeline) assert.ok(allowed.includes(entry.event), entry.event);
    };

    const held = await market<Json & { paymentReport: Json; timeline: { event: string; data: Json }[] }>(stack, "GET", `/trades/${order.escrowOrderId}`, { token: buyer.token });
    assert.equal(held.status, 200, JSON.stringify(held.body));
    assertNothingOfTheHold(held.body);
    assert.deepEqual(held.body.timeline.map((entry) => entry.event), ["LOCKED", "PAYMENT_REPORTED"]);
    assert.deepEqual(Object.keys(held.body.timeline[0]!.data).sort(), ["lockExpiresAt", "txHash"]);
    assert.equal(held.body.paymentReport.verification, "PENDING", "held: still pending for the buyer");

    const decided = await stack.service.admin("POST", `/orders/${order.id}/review`, { decision: "RELEASE", note: operatorNote });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    await waitForStatus(stack, order.id, "COMPLETED", 60_000);
    const done = await market<Json & { paymentReport: Json; timeline: { event: string; data: Json }[] }>(stack, "GET", `/trades/${order.escrowOrderId}`, { token: buyer.token });
    assertNothingOfTheHold(done.body);
    assert.deepEqual(done.body.timeline.map((entry) => entry.event), ["LOCKED", "PAYMENT_REPORTED", "PAYMENT_VERIFIED", "COMPLETED"]);
    assert.equal(done.body.paymentReport.verification, "VERIFIED");
    // The partner (the seller's side) still sees the whole record.
    const partnerView = await stack.service.api<{ timeline: { event: string }[] }>("GET", `/orders/${order.id}`, { key });
    assert.ok(partnerView.body.timeline.some((entry) => entry.event === "CREATED"));
  });
});

describe("reputation from the chain", () => {
  // Last in the file: the sandbox seller's lost points show on every later order of the book.
  test("a dispute resolved against the seller shows on the book's sellerReputation; one against the buyer on its /me", async () => {
    const againstSeller = await disputedOrder(stack, { by: "BUYER", buyerWallet: 3, amountUsdc: 7 });
    await resolve(stack, againstSeller.id, "BUYER", "CEP shows the payment");
    await waitForAdminStatus(stack, againstSeller.id, "COMPLETED");
    const sellerScore = Number(await chainReputation(stack, againstSeller.seller));
    assert.ok(sellerScore < 0, `the seller lost points on chain: ${sellerScore}`);

    const viewer = await signIn(stack);
    const listed = await activeOrder(stack, 6);
    const shown = await waitFor("the seller's reputation on the book", async () => {
      const book = await market<{ orders: Json[] }>(stack, "GET", "/orders?limit=100", { token: viewer.token });
      const item = book.body.orders.find((entry) => entry.escrowOrderId === listed.escrowOrderId);
      return item && item.sellerReputation !== 0 ? item : undefined;
    });
    assert.equal(shown.sellerReputation, sellerScore);

    const againstBuyer = await disputedOrder(stack, { by: "SELLER", buyerWallet: 4, amountUsdc: 8 });
    await resolve(stack, againstBuyer.id, "SELLER", "No payment reached the seller");
    await waitForAdminStatus(stack, againstBuyer.id, "REFUNDED");
    const buyerScore = Number(await chainReputation(stack, againstBuyer.buyer));
    assert.ok(buyerScore < 0, `the buyer lost points on chain: ${buyerScore}`);
    const buyer = await signIn(stack, privateKeyToAccount(sandboxAccounts[4]!.privateKey));
    assert.equal(buyer.account.address, againstBuyer.buyer);
    const me = await waitFor("the buyer's reputation on /me", async () => {
      const answer = await market(stack, "GET", "/me", { token: buyer.token });
      return answer.body.reputation !== 0 ? answer.body : undefined;
    });
    assert.equal(me.reputation, buyerScore);
  });
});
