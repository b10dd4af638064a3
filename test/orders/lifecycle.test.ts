import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { zeroAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { applyOrderEvent } from "../../src/orders/store.ts";
import { placeOrder, startTradeStack, waitFor, waitForSettled, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(() => stack?.close());

const sandbox = (orderId: string, action: string, body: Json = {}) =>
  stack.service.api<Json>("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey, body });

async function outboxEvents(orderId: string): Promise<{ event_type: string; sequence: number; data: Json }[]> {
  const { rows } = await stack.service.pool.query<{ event_type: string; sequence: number; body: string }>(
    "SELECT event_type, sequence, body FROM webhook_events WHERE order_id = $1 ORDER BY sequence",
    [orderId],
  );
  return rows.map((row) => ({ event_type: row.event_type, sequence: row.sequence, data: (JSON.parse(row.body) as { data: Json }).data }));
}

async function activeOrder(): Promise<string> {
  const order = await placeOrder(stack);
  assert.equal((await sandbox(order.id, "deposit")).status, 200);
  await waitForStatus(stack, order.id, "ACTIVE");
  return order.id;
}

async function lockedOrder(): Promise<string> {
  const id = await activeOrder();
  assert.equal((await sandbox(id, "lock")).status, 200);
  await waitForStatus(stack, id, "LOCKED");
  return id;
}

describe("escrow events move orders", () => {
  test("a confirmed deposit makes the order ACTIVE with its escrow transaction and listing expiry", async () => {
    const order = await placeOrder(stack);
    const deposit = await sandbox(order.id, "deposit");
    const detail = await waitForStatus(stack, order.id, "ACTIVE");
    assert.equal(detail.escrowTxHash, deposit.body.txHash);
    assert.equal(detail.escrowStatus, "CONFIRMED");
    assert.ok(Date.parse(String(detail.expiresAt)) > Date.now() + 23 * 3600_000, "expiresAt is now the listing expiry");
    const events = await outboxEvents(order.id);
    assert.deepEqual(events.map((event) => [event.event_type, event.sequence]), [["order.created", 1], ["order.deposit_confirmed", 2]]);
    assert.equal(events[1]!.data.escrowTxHash, deposit.body.txHash);
  });

  test("a buyer's lock makes the order LOCKED with the buyer and a 24-hour payment window", async () => {
    const id = await activeOrder();
    const lock = await sandbox(id, "lock", { buyerWallet: 2 });
    const detail = await waitForStatus(stack, id, "LOCKED");
    assert.equal(String(detail.buyerWallet).toLowerCase(), String(lock.body.buyerWallet).toLowerCase());
    const window = Date.parse(String(detail.lockExpiresAt)) - Date.parse(String(detail.lockedAt));
    assert.equal(window, stack.service.config.lockWindowSeconds * 1000);
    const events = await outboxEvents(id);
    assert.equal(events.at(-1)!.event_type, "order.locked");
    assert.equal(events.at(-1)!.data.lockExpiresAt, detail.lockExpiresAt);
  });

  test("a dispute opened on chain makes a LOCKED order DISPUTED, with who opened it", async () => {
    const id = await lockedOrder();
    assert.equal((await sandbox(id, "dispute", { by: "SELLER" })).status, 200);
    await waitForStatus(stack, id, "DISPUTED");
    const events = await outboxEvents(id);
    assert.equal(events.at(-1)!.event_type, "order.disputed");
    assert.equal(events.at(-1)!.data.openedBy, "SELLER");
  });

  test("cancelling an ACTIVE order refunds the escrow on chain and ends REFUNDED", async () => {
    const id = await activeOrder();
    const cancel = await stack.service.api<Json>("POST", `/orders/${id}/cancel`, { key: stack.partner.apiKey });
    assert.equal(cancel.status, 200);
    assert.equal(cancel.body.status, "ACTIVE", "the refund is on its way; the order ends when the chain shows it");
    const detail = await waitForStatus(stack, id, "REFUNDED");
    assert.match(String(detail.refundTxHash), /^0x[0-9a-f]{64}$/);
    const events = await outboxEvents(id);
    assert.equal(events.at(-1)!.event_type, "order.refunded");
    assert.equal(events.at(-1)!.data.refundTxHash, detail.refundTxHash);
    const onChain = await stack.service.chain!.gateway.escrowStatus(String(detail.escrowOrderId) as Hex);
    assert.equal(onChain, "Refunded");
  });

  test("cancelling twice sends one refund transaction", async () => {
    const id = await activeOrder();
    const [first, second] = await Promise.all([
      stack.service.api<Json>("POST", `/orders/${id}/cancel`, { key: stack.partner.apiKey }),
      stack.service.api<Json>("POST", `/orders/${id}/cancel`, { key: stack.partner.apiKey }),
    ]);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    await waitForStatus(stack, id, "REFUNDED");
    const rows = await waitForSettled("the refund", async () => (await stack.service.pool.query<{ status: string }>("SELECT status FROM chain_transactions WHERE order_id = $1", [id])).rows);
    assert.deepEqual(rows, [{ status: "MINED" }]);
  });
});

describe("sanctions screening", () => {
  test("a deposit from a wallet on the sanctions list flags the user: the next quote is USER_SANCTIONED", async () => {
    const order = await placeOrder(stack, { ref: "listed-seller" });
    // Sandbox wallet 5 is listed in data/sanctions/sandbox-sdn.csv.
    assert.equal((await sandbox(order.id, "deposit", { sellerWallet: 5 })).status, 200);
    await waitForStatus(stack, order.id, "ACTIVE");
    const user = await stack.service.api<Json>("GET", "/users/listed-seller", { key: stack.partner.apiKey });
    assert.equal(user.body.isSanctioned, true);
    const quote = await stack.service.api<Json>("POST", "/quotes", { key: stack.partner.apiKey, body: { type: "SELL", amountUsdc: 1, partnerUserRef: "listed-seller" } });
    assert.equal(quote.status, 403);
    assert.equal(quote.body.error, "USER_SANCTIONED");
  });
});

describe("refusals", () => {
  test("a LOCKED order cannot be cancelled", async () => {
    const id = await lockedOrder();
    const response = await stack.service.api<Json>("POST", `/orders/${id}/cancel`, { key: stack.partner.apiKey });
    assert.equal(response.status, 409);
    assert.equal(response.body.error, "ORDER_NOT_CANCELLABLE");
  });

  test("the sandbox refuses a deposit for an order that is not PENDING_DEPOSIT", async () => {
    const id = await activeOrder();
    const response = await sandbox(id, "deposit");
    assert.equal(response.status, 409);
    assert.equal(response.body.error, "INVALID_STATE");
  });

  test("the sandbox refuses to lock an order that is not ACTIVE, and a dispute on one that is not LOCKED", async () => {
    const order = await placeOrder(stack);
    assert.equal((await sandbox(order.id, "lock")).body.error, "INVALID_STATE");
    assert.equal((await sandbox(order.id, "dispute", { by: "BUYER" })).body.error, "INVALID_STATE");
  });

  test("the seller's own wallet cannot lock the order", async () => {
    const id = await activeOrder();
    const response = await sandbox(id, "lock", { buyerWallet: 0 });
    assert.equal(response.status, 400);
    const detail = await stack.service.api<Json>("GET", `/orders/${id}`, { key: stack.partner.apiKey });
    assert.equal(detail.body.status, "ACTIVE");
  });

  test("an escrow event that does not fit the order's state changes nothing", async () => {
    const id = await activeOrder();
    const { rows } = await stack.service.pool.query<{ version: number }>("SELECT version FROM orders WHERE id = $1", [id]);
    // A Released event cannot apply to an ACTIVE order: the machine has no such transition.
    const result = await applyOrderEvent(stack.service.pool, orderEffectPorts(stack.service.boss), id, { type: "RELEASED", txHash: "0x01", at: new Date().toISOString() });
    assert.equal(result.changed, false);
    const after = await stack.service.pool.query<{ version: number; status: string }>("SELECT version, status FROM orders WHERE id = $1", [id]);
    assert.deepEqual(after.rows[0], { version: rows[0]!.version, status: "ACTIVE" });
  });
});

describe("the indexer's events", () => {
  test("are applied once: replaying them from the start changes nothing", async () => {
    const id = await lockedOrder();
    const before = await stack.service.pool.query("SELECT version, status, machine_snapshot FROM orders WHERE id = $1", [id]);
    const timelineBefore = await stack.service.pool.query("SELECT count(*)::int AS n FROM order_timeline WHERE order_id = $1", [id]);
    // Rewind the cursor to the beginning: the consumer reads every event again.
    await stack.service.pool.query("UPDATE chain_cursor SET block_number = -1, log_index = -1 WHERE name = $1", [stack.indexerSchema]);
    await waitFor("the replay to pass the order's events", async () => {
      const { rows } = await stack.service.pool.query<{ block_number: string }>("SELECT block_number FROM chain_cursor WHERE name = $1", [stack.indexerSchema]);
      return Number(rows[0]!.block_number) > 0 ? true : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const afterReplay = await stack.service.pool.query("SELECT version, status, machine_snapshot FROM orders WHERE id = $1", [id]);
    assert.deepEqual(afterReplay.rows, before.rows);
    const timelineAfter = await stack.service.pool.query("SELECT count(*)::int AS n FROM order_timeline WHERE order_id = $1", [id]);
    assert.deepEqual(timelineAfter.rows, timelineBefore.rows);
  });

  test("are consumed in chain order", async () => {
    const id = await lockedOrder();
    const { rows } = await stack.service.pool.query<{ event: string }>("SELECT event FROM order_timeline WHERE order_id = $1 ORDER BY seq", [id]);
    assert.deepEqual(rows.map((row) => row.event), ["CREATED", "DEPOSIT_CONFIRMED", "LOCKED"]);
  });

  test("an escrow order this service never created is passed over and later orders still move", async () => {
    const gateway = stack.service.chain!.gateway;
    const stranger = gateway.walletClient(privateKeyToAccount(sandboxAccounts[3]!.privateKey));
    const amount = 1_000_000n;
    const terms = {
      orderId: `0x${"ab".repeat(32)}` as Hex,
      token: gateway.settings.usdcAddress,
      amount,
      feeBps: 0,
      feeRecipient: zeroAddress,
      treasuryShareBps: 0,
      depositDeadline: BigInt(Math.floor(Date.now() / 1000) + 600),
      listingWindow: 3600n,
      lockWindow: 3600n,
    };
    const signature = await gateway.signTerms(terms);
    const mined = (hash: Hex) => gateway.publicClient.waitForTransactionReceipt({ hash });
    await mined(await stranger.writeContract({ address: terms.token, abi: testUsdcAbi, functionName: "mint", args: [stranger.account.address, amount], chain: gateway.chain }));
    await mined(await stranger.writeContract({ address: terms.token, abi: testUsdcAbi, functionName: "approve", args: [gateway.settings.escrowAddress, amount], chain: gateway.chain }));
    const deposit = await stranger.writeContract({ address: gateway.settings.escrowAddress, abi: escrowAbi, functionName: "deposit", args: [terms, signature], chain: gateway.chain });
    const receipt = await mined(deposit);
    const id = await activeOrder();
    const { rows } = await stack.service.pool.query<{ block_number: string }>("SELECT block_number FROM chain_cursor WHERE name = $1", [stack.indexerSchema]);
    assert.ok(BigInt(rows[0]!.block_number) > receipt.blockNumber, "the cursor moved past the unknown order's event");
    const detail = await stack.service.api<Json>("GET", `/orders/${id}`, { key: stack.partner.apiKey });
    assert.equal(detail.body.status, "ACTIVE");
  });
});
