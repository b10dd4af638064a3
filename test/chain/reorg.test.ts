// Reorganisations on the real local chain, service and Ponder (decisions 6, 7; issue 22). Hardhat's node
// reorganises with evm_snapshot / evm_revert and then mining a longer branch; the removed blocks'
// transactions are gone from it, so whoever sent them sends them again (the seller, the buyer; the
// service's own sender by itself). Automine with CHAIN_CONFIRMATIONS=2, every block mined by the test,
// so the depth of each reorganisation is exact. Ponder's finality on chain 31337 is 30 blocks (its default
// for chains it does not know), far deeper than any of these, so it rewinds them all.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPublicClient, encodeFunctionData, http, keccak256, serializeTransaction, type Hex, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { createEscrowGateway, lockPermitDeadline, type EscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { DEV_ACCOUNT, devAccounts } from "../../src/stack/local-node.ts";
import { placeOrder, startTradeStack, testNode, waitFor, waitForStatus, type TestNode, type TradeStack } from "../support/trade-stack.ts";

const CONFIRMATIONS = 2;
let stack: TradeStack;
let node: TestNode;
before(async () => {
  // The reconciliation with the chain runs only when a test asks (passes()), each pass due after 1 s.
  stack = await startTradeStack({ CHAIN_CONFIRMATIONS: String(CONFIRMATIONS), CHAIN_RECONCILE_INTERVAL_SECONDS: "1" }, {}, { mining: "auto" });
  await stack.service.chain!.reconciliation!.stop();
  node = testNode(stack.chain.rpcUrl);
});
after(() => stack?.close());

/** Back to `snapshot`, then a branch `blocks` long without what was mined since: a reorganisation. */
async function reorganise(snapshot: unknown, blocks: number): Promise<void> {
  assert.equal(await node.rpc("evm_revert", [snapshot]), true);
  await node.mine(blocks);
}

/**
 * The signed bytes of every transaction mined after `block`, in chain order: what their senders broadcast
 * again after a reorganisation removed them.
 */
async function transactionsSince(block: bigint): Promise<Hex[]> {
  const client = createPublicClient({ transport: http(stack.chain.rpcUrl) });
  const raws: Hex[] = [];
  for (let number = block + 1n; number <= (await client.getBlockNumber({ cacheTime: 0 })); number++) {
    for (const tx of (await client.getBlock({ blockNumber: number, includeTransactions: true })).transactions) {
      const raw = serializeTransaction({ ...tx, data: tx.input } as TransactionSerializable, { r: tx.r, s: tx.s, yParity: tx.yParity! });
      assert.equal(keccak256(raw), tx.hash, "the same signed bytes");
      raws.push(raw);
    }
  }
  return raws;
}

/** Waits until Ponder holds the order's `eventName` from another block than `blockHash` (mined again). */
async function minedAgain(escrowOrderId: string, eventName: string, blockHash: string): Promise<{ transaction_hash: string; block_hash: string }> {
  return waitFor(`${eventName} of ${escrowOrderId} mined again`, async () => {
    const rows = await indexedEvents(escrowOrderId, eventName);
    return rows.length === 1 && rows[0]!.block_hash !== blockHash ? rows[0] : undefined;
  });
}

async function sandbox(orderId: string, action: string): Promise<void> {
  const response = await stack.service.api("POST", `/sandbox/orders/${orderId}/${action}`, { key: stack.partner.apiKey });
  assert.equal(response.status, 200, `${action}: ${JSON.stringify(response.body)}`);
}

/** The order's escrow events as Ponder holds them now (the canonical chain). */
async function indexedEvents(escrowOrderId: string, eventName: string): Promise<{ transaction_hash: string; block_hash: string }[]> {
  const { rows } = await stack.service.pool.query<{ transaction_hash: string; block_hash: string }>(
    `SELECT transaction_hash, block_hash FROM "${stack.indexerSchema}".escrow_event WHERE event_name = $1 AND order_id = $2`,
    [eventName, escrowOrderId],
  );
  return rows;
}

const indexed = (escrowOrderId: string, eventName: string, count: number) =>
  waitFor(`${count} ${eventName} of ${escrowOrderId} indexed`, async () => ((await indexedEvents(escrowOrderId, eventName)).length === count ? true : undefined));

async function timeline(orderId: string): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const { rows } = await stack.service.pool.query<{ event: string; data: Record<string, unknown> }>("SELECT event, data FROM order_timeline WHERE order_id = $1 ORDER BY seq", [orderId]);
  return rows;
}

/** Webhooks for the order: numbered 1..n in order, and no kind of event twice. */
async function assertWebhooksOnce(orderId: string): Promise<string[]> {
  const { rows } = await stack.service.pool.query<{ sequence: number; event_type: string }>("SELECT sequence, event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [orderId]);
  assert.deepEqual(rows.map((row) => row.sequence), rows.map((_, index) => index + 1));
  const types = rows.map((row) => row.event_type);
  assert.equal(new Set(types).size, types.length, `a webhook repeated: ${types.join(", ")}`);
  return types;
}

async function releaseTransactions(orderId: string): Promise<{ tx_hash: string; status: string }[]> {
  const { rows } = await stack.service.pool.query<{ tx_hash: string; status: string }>("SELECT tx_hash, status FROM chain_transactions WHERE order_id = $1 AND action = 'confirmPayment'", [orderId]);
  return rows;
}

/** The order has one release transaction, COMPLETED once in its timeline, and each of its webhooks was sent once. */
async function completedOnce(orderId: string): Promise<void> {
  assert.equal((await releaseTransactions(orderId)).length, 1);
  assert.equal((await timeline(orderId)).filter((entry) => entry.event === "COMPLETED").length, 1);
  await assertWebhooksOnce(orderId);
}

type Order = Awaited<ReturnType<typeof placeOrder>>;

/** The sandbox's `action` on the order, until Ponder holds its `eventName` (not yet confirmed). */
async function acted(order: Order, action: string, eventName: string): Promise<void> {
  await sandbox(order.id, action);
  await indexed(order.escrowOrderId, eventName, 1);
}

/** Mines the confirmations on top and waits for the order to be `status`. */
async function confirmed(order: Order, status: string): Promise<void> {
  await node.mine(CONFIRMATIONS);
  await waitForStatus(stack, order.id, status);
}

/** A new order whose deposit Ponder holds, with no confirmation yet. */
async function depositedOrder(): Promise<Order> {
  const order = await placeOrder(stack);
  await acted(order, "deposit", "Deposited");
  return order;
}

/** A deposited, confirmed, ACTIVE order. */
async function activeOrder(): Promise<Order> {
  const order = await depositedOrder();
  await confirmed(order, "ACTIVE");
  return order;
}

/** An ACTIVE order locked by the sandbox buyer, confirmed: LOCKED. */
async function lockedOrder(): Promise<Order> {
  const order = await activeOrder();
  await acted(order, "lock", "Locked");
  await confirmed(order, "LOCKED");
  return order;
}

async function orphanedMetric(): Promise<number> {
  const text = await (await fetch(`${stack.service.baseUrl}/metrics`)).text();
  const match = /^offramp_chain_orphaned_events_total (\d+)/m.exec(text);
  assert.ok(match, "the metric is exported");
  return Number(match[1]);
}

test("an escrow event is held until it has enough confirmations", async () => {
  const order = await depositedOrder();
  await sleep(1500);
  assert.equal((await timeline(order.id)).length, 1, "one block on top is not enough");
  await confirmed(order, "ACTIVE");
});

test("within the confirmations: a deposit in a removed block is never applied; made again, it lists the order once", async () => {
  const order = await placeOrder(stack);
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "deposit", "Deposited");

  await reorganise(snapshot, 6);
  await indexed(order.escrowOrderId, "Deposited", 0);
  await sleep(1500);
  assert.deepEqual((await timeline(order.id)).map((entry) => entry.event), ["CREATED"]);

  await sandbox(order.id, "deposit");
  await confirmed(order, "ACTIVE");
  assert.deepEqual((await timeline(order.id)).map((entry) => entry.event), ["CREATED", "DEPOSIT_CONFIRMED"]);
  await assertWebhooksOnce(order.id);
});

test("within the confirmations: a lock in a removed block is never applied; made again, it locks the order once", async () => {
  const order = await activeOrder();
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "lock", "Locked");

  await reorganise(snapshot, 6);
  await indexed(order.escrowOrderId, "Locked", 0);
  await sleep(1500);
  assert.equal((await waitForStatus(stack, order.id, "ACTIVE")).status, "ACTIVE");

  await sandbox(order.id, "lock");
  await confirmed(order, "LOCKED");
  assert.equal((await timeline(order.id)).filter((entry) => entry.event === "LOCKED").length, 1);
  await assertWebhooksOnce(order.id);
});

test("within the confirmations: the service's release in a removed block is sent again with the same bytes and completes the order once", async () => {
  const order = await lockedOrder();
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "pay", "Released");
  const [first] = await indexedEvents(order.escrowOrderId, "Released");
  const [sent] = await releaseTransactions(order.id);
  assert.equal(sent?.tx_hash, first!.transaction_hash);

  await reorganise(snapshot, 3);
  // The sender finds its transaction gone and broadcasts it again (automine mines it at once).
  const again = await minedAgain(order.escrowOrderId, "Released", first!.block_hash);
  assert.equal(again.transaction_hash, sent.tx_hash, "the same signed transaction");
  await confirmed(order, "COMPLETED");
  await settledTransaction(order.id, "confirmPayment");
  await completedOnce(order.id);
});

test("beyond the confirmations: an applied deposit that vanished is reported (timeline, metric) and, made again, changes nothing twice", async () => {
  const before = await orphanedMetric();
  const snapshot = await node.rpc("evm_snapshot");
  const forkBlock = await node.blockNumber();
  const order = await activeOrder();
  const removed = await transactionsSince(forkBlock);

  // Deeper than CHAIN_CONFIRMATIONS: the deposit's block and the two on top of it are replaced.
  await reorganise(snapshot, 8);
  await indexed(order.escrowOrderId, "Deposited", 0);
  const orphaned = await waitFor("the vanished deposit reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED"));
  assert.equal(orphaned.data.chainEvent, "Deposited");
  assert.equal(orphaned.data.resentByService, false);
  assert.equal(await orphanedMetric(), before + 1);

  // The seller broadcasts the same transactions again: the order, already ACTIVE, is not listed twice.
  for (const raw of removed) await node.rpc("eth_sendRawTransaction", [raw]);
  await indexed(order.escrowOrderId, "Deposited", 1);
  await node.mine(CONFIRMATIONS + 1);
  await sleep(1500);
  const events = (await timeline(order.id)).map((entry) => entry.event);
  assert.deepEqual(events, ["CREATED", "DEPOSIT_CONFIRMED", "CHAIN_EVENT_ORPHANED"]);
  assert.equal((await waitForStatus(stack, order.id, "ACTIVE")).status, "ACTIVE");
  await assertWebhooksOnce(order.id);
});

test("beyond the confirmations: the service's settled release that vanished is sent again with the same bytes and mined once", async () => {
  const order = await lockedOrder();
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "pay", "Released");
  const [first] = await indexedEvents(order.escrowOrderId, "Released");
  await confirmed(order, "COMPLETED");
  const settled = await settledTransaction(order.id, "confirmPayment");

  await reorganise(snapshot, 6);
  const orphaned = await waitFor("the vanished release reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED"));
  assert.equal(orphaned.data.chainEvent, "Released");
  assert.equal(orphaned.data.resentByService, true);
  // The sender broadcasts the stored bytes again; automine mines them.
  await minedAgain(order.escrowOrderId, "Released", first!.block_hash);
  await node.mine(CONFIRMATIONS);
  await settledTransaction(order.id, "confirmPayment");
  const rows = await releaseTransactions(order.id);
  assert.deepEqual(rows, [{ tx_hash: settled.tx_hash, status: "MINED" }]);
  assert.deepEqual((await indexedEvents(order.escrowOrderId, "Released")).map((row) => row.transaction_hash), [settled.tx_hash]);
  await sleep(1500);
  await completedOnce(order.id);
});

test("beyond the confirmations: the service's refund that vanished and was mined again under another hash is the one the order records", async () => {
  const order = await activeOrder();
  const snapshot = await node.rpc("evm_snapshot");
  const cancel = await stack.service.api("POST", `/orders/${order.id}/cancel`, { key: stack.partner.apiKey });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
  await indexed(order.escrowOrderId, "Refunded", 1);
  const [first] = await indexedEvents(order.escrowOrderId, "Refunded");
  await confirmed(order, "REFUNDED");
  const client = createPublicClient({ transport: http(stack.chain.rpcUrl) });
  const original = await client.getTransaction({ hash: first!.transaction_hash as Hex });

  // Back before the refund, whose transaction is then mined again as a fee replacement is: the same call
  // under the same nonce with higher fees, so another hash. The service's own re-send then finds its
  // nonce taken and the escrow already refunded.
  assert.equal(await node.rpc("evm_revert", [snapshot]), true);
  const replacement = await privateKeyToAccount(stack.chainSettings.servicePrivateKey).signTransaction({
    type: "eip1559",
    chainId: stack.chainSettings.chainId,
    to: original.to!,
    data: original.input,
    nonce: original.nonce,
    gas: original.gas,
    maxFeePerGas: original.maxFeePerGas! * 2n,
    maxPriorityFeePerGas: original.maxPriorityFeePerGas! * 2n + 1n,
  });
  const replacementHash = keccak256(replacement);
  await node.rpc("eth_sendRawTransaction", [replacement]);
  await node.mine(CONFIRMATIONS + 3);

  const recorded = await waitFor("the order to record the refund on chain", async () => {
    const detail = await stack.service.api<{ status: string; refundTxHash: string | null }>("GET", `/orders/${order.id}`, { key: stack.partner.apiKey });
    return detail.body.refundTxHash === replacementHash ? detail.body : undefined;
  });
  assert.equal(recorded.status, "REFUNDED");
  const entries = await timeline(order.id);
  const orphaned = entries.find((entry) => entry.event === "CHAIN_EVENT_ORPHANED");
  assert.deepEqual([orphaned?.data.chainEvent, orphaned?.data.txHash], ["Refunded", first!.transaction_hash]);
  const replaced = entries.find((entry) => entry.event === "CHAIN_TX_REPLACED");
  assert.deepEqual(replaced?.data, { field: "refundTxHash", orphanedTxHash: first!.transaction_hash, txHash: replacementHash });
  assert.deepEqual((await indexedEvents(order.escrowOrderId, "Refunded")).map((row) => row.transaction_hash), [replacementHash], "refunded once on chain");
  assert.equal(entries.filter((entry) => entry.event === "REFUNDED").length, 1);
  await assertWebhooksOnce(order.id);
});

/** The order's `action` transaction once the sender has settled it MINED. */
function settledTransaction(orderId: string, action: string): Promise<{ status: string; tx_hash: string }> {
  return waitFor(`the ${action} of ${orderId} settled`, async () => {
    const { rows } = await stack.service.pool.query<{ status: string; tx_hash: string }>("SELECT status, tx_hash FROM chain_transactions WHERE order_id = $1 AND action = $2", [orderId, action]);
    return rows[0]?.status === "MINED" ? rows[0] : undefined;
  });
}

/**
 * A LOCKED order disputed by `by`, then (after `snapshot`) resolved NO_FAULT_RETRY: LOCKED again, its
 * resolution settled. Going back to `snapshot` removes the resolution beyond the confirmations.
 */
async function resolvedAfterSnapshot(by: "BUYER" | "SELLER"): Promise<{ order: Order; snapshot: unknown; resolution: { tx_hash: string } }> {
  const order = await lockedOrder();
  const dispute = await stack.service.api("POST", `/sandbox/orders/${order.id}/dispute`, { key: stack.partner.apiKey, body: { by } });
  assert.equal(dispute.status, 200, JSON.stringify(dispute.body));
  await indexed(order.escrowOrderId, "DisputeOpened", 1);
  await confirmed(order, "DISPUTED");

  const snapshot = await node.rpc("evm_snapshot");
  const resolved = await stack.service.admin("POST", `/orders/${order.id}/resolve`, { outcome: "NO_FAULT_RETRY" });
  assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
  await indexed(order.escrowOrderId, "DisputeResolved", 1);
  await confirmed(order, "LOCKED");
  return { order, snapshot, resolution: await settledTransaction(order.id, "resolveDispute") };
}

// Found by the chaos run in CI: a dispute's resolution (NO_FAULT_RETRY, the escrow Locked again) removed
// beyond the confirmations, and the order, LOCKED by it, paid and asking for its release before the
// resolution was mined again. The escrow, Disputed on the new branch, refused the release; the sender gave
// it up (SKIPPED) and the order stayed PENDING_RELEASE for good once the resolution came back.
test("beyond the confirmations: a release asked for before the order's removed dispute resolution is mined again waits for it, then is mined once", async () => {
  const { order, snapshot } = await resolvedAfterSnapshot("BUYER");

  // The resolution's blocks replaced by a longer branch; the sender's broadcast of it again waits in the
  // mempool until the test mines.
  await node.rpc("evm_setAutomine", [false]);
  try {
    await reorganise(snapshot, 6);
    const orphaned = await waitFor("the vanished resolution reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED"));
    assert.equal(orphaned.data.chainEvent, "DisputeResolved");
    assert.equal(orphaned.data.resentByService, true);

    await sandbox(order.id, "pay");
    await waitForStatus(stack, order.id, "PENDING_RELEASE");
    await waitFor("the release requested", async () => ((await releaseTransactions(order.id)).length === 1 ? true : undefined));
    await sleep(3000);
    assert.deepEqual((await releaseTransactions(order.id)).map((row) => row.status), ["PENDING"], "the release waits, not given up");
  } finally {
    await node.rpc("evm_setAutomine", [true]);
  }

  await node.mine(1); // the resolution, mined again: the escrow is Locked
  await indexed(order.escrowOrderId, "Released", 1);
  await confirmed(order, "COMPLETED");
  await settledTransaction(order.id, "confirmPayment");
  assert.equal((await indexedEvents(order.escrowOrderId, "DisputeResolved")).length, 1);
  await completedOnce(order.id);
});

test("beyond the confirmations: a release sent again and reverted before the order's removed dispute resolution was mined again is signed anew after it, and mined once", async () => {
  const { order, snapshot, resolution } = await resolvedAfterSnapshot("SELLER");
  await acted(order, "pay", "Released");
  await confirmed(order, "COMPLETED");
  const release = await settledTransaction(order.id, "confirmPayment");

  // Both removed; the sender broadcasts both again. The resolution is dropped from the mempool, so the
  // release is mined first, on an escrow Disputed again: it reverts.
  await node.rpc("evm_setAutomine", [false]);
  try {
    await reorganise(snapshot, 8);
    await waitFor("both vanished events reported", async () => ((await timeline(order.id)).filter((entry) => entry.event === "CHAIN_EVENT_ORPHANED" && entry.data.resentByService === true).length === 2 ? true : undefined));
    for (const hash of [resolution.tx_hash, release.tx_hash]) await waitFor(`${hash} broadcast again`, async () => ((await node.rpc("eth_getTransactionByHash", [hash])) ? true : undefined));
    assert.equal(await node.rpc("hardhat_dropTransaction", [resolution.tx_hash]), true);
    await node.mine(1);
    const client = createPublicClient({ transport: http(stack.chain.rpcUrl) });
    assert.equal((await client.getTransactionReceipt({ hash: release.tx_hash as Hex })).status, "reverted");
  } finally {
    await node.rpc("evm_setAutomine", [true]);
  }

  // Final at its depth, the revert is not the release's end: the resolution is sent again and mined, then
  // the release is signed anew.
  await node.mine(CONFIRMATIONS);
  const released = await waitFor("the release mined again", async () => {
    const rows = await indexedEvents(order.escrowOrderId, "Released");
    return rows.length === 1 ? rows[0] : undefined;
  });
  assert.notEqual(released.transaction_hash, release.tx_hash, "signed anew under another nonce");
  await node.mine(CONFIRMATIONS);
  await waitFor("the new release settled", async () => ((await releaseTransactions(order.id))[0]?.tx_hash === released.transaction_hash && (await releaseTransactions(order.id))[0]?.status === "MINED" ? true : undefined));
  assert.equal((await indexedEvents(order.escrowOrderId, "DisputeResolved")).length, 1);
  await sleep(1500);
  assert.equal((await waitForStatus(stack, order.id, "COMPLETED")).status, "COMPLETED");
  await completedOnce(order.id);
});

/** `count` passes of the reconciliation, each one due (an interval after the last). */
async function passes(count: number): Promise<void> {
  for (let pass = 0; pass < count; pass++) {
    await sleep(1100);
    await stack.service.chain!.reconciliation!.reconcileOnce();
  }
}

/** Runs `work` with the escrow event consumer stopped: nothing Ponder holds reaches the orders meanwhile. */
async function consumerHeldBack(work: () => Promise<void>): Promise<void> {
  const consumer = stack.service.chain!.consumer!;
  await consumer.stop();
  try {
    await work();
  } finally {
    consumer.start();
  }
}

// Found by the chaos run in CI: a release settled MINED while the consumer lagged (PostgreSQL killed), then
// removed by a reorganisation deeper than the confirmations before its Released was applied. No applied
// event was orphaned, so nothing handed it back; the order stayed PENDING_RELEASE, the escrow Locked.
test("beyond the confirmations, the consumer behind: a settled release removed before its event was applied is found by the reconciliation and sent again with the same bytes", async () => {
  const order = await lockedOrder();
  let settled: { status: string; tx_hash: string } | undefined;
  let first: { block_hash: string } | undefined;
  await consumerHeldBack(async () => {
    await passes(1); // the reconciliation has seen the chain before the release
    const snapshot = await node.rpc("evm_snapshot");
    await acted(order, "pay", "Released");
    [first] = await indexedEvents(order.escrowOrderId, "Released");
    await node.mine(CONFIRMATIONS);
    settled = await settledTransaction(order.id, "confirmPayment");
    await reorganise(snapshot, 6);
    await indexed(order.escrowOrderId, "Released", 0);
    assert.equal((await timeline(order.id)).some((entry) => entry.event === "COMPLETED"), false, "the release was never applied");

    await passes(2); // the first sees the chain after the release settled; the second looks for its event
    const removed = await waitFor("the removed release reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_TRANSACTION_REMOVED"));
    assert.deepEqual(removed.data, { action: "confirmPayment", txHash: settled.tx_hash, resentByService: true });
    const again = await minedAgain(order.escrowOrderId, "Released", first!.block_hash);
    assert.equal(again.transaction_hash, settled.tx_hash, "the same signed transaction");
  });
  await confirmed(order, "COMPLETED");
  await settledTransaction(order.id, "confirmPayment");
  assert.deepEqual(await releaseTransactions(order.id), [{ tx_hash: settled!.tx_hash, status: "MINED" }]);
  await completedOnce(order.id);
});

test("beyond the confirmations, the consumer behind: a release the reconciliation applied and a reorganisation then removed is reported orphaned and sent again", async () => {
  const order = await lockedOrder();
  let settled: { status: string; tx_hash: string } | undefined;
  await consumerHeldBack(async () => {
    await passes(1);
    const snapshot = await node.rpc("evm_snapshot");
    await acted(order, "pay", "Released");
    const [first] = await indexedEvents(order.escrowOrderId, "Released");
    await node.mine(CONFIRMATIONS);
    settled = await settledTransaction(order.id, "confirmPayment");
    await passes(2); // the second reads the release's block from the chain and applies it
    assert.equal((await waitForStatus(stack, order.id, "COMPLETED")).status, "COMPLETED");

    await reorganise(snapshot, 6);
    await indexed(order.escrowOrderId, "Released", 0);
    await passes(1); // reads the release's block again: another block now
    const orphaned = await waitFor("the vanished release reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED"));
    assert.deepEqual([orphaned.data.chainEvent, orphaned.data.txHash, orphaned.data.resentByService], ["Released", settled.tx_hash, true]);
    const again = await minedAgain(order.escrowOrderId, "Released", first!.block_hash);
    assert.equal(again.transaction_hash, settled.tx_hash, "the same signed transaction");
  });
  await node.mine(CONFIRMATIONS);
  await settledTransaction(order.id, "confirmPayment");
  assert.deepEqual(await releaseTransactions(order.id), [{ tx_hash: settled!.tx_hash, status: "MINED" }]);
  await sleep(1500);
  await completedOnce(order.id);
});

// Found by the chaos run in CI: the buyer's lock removed by a reorganisation deeper than the confirmations
// while the consumer lagged, and the order, LOCKED, paid. The sender found the escrow Active, short of the
// Locked a release needs, and (knowing of no removed event yet) gave the release up as pointless
// (SKIPPED); once the lock was mined again the order stayed PENDING_RELEASE for good.
test("beyond the confirmations, the consumer behind: a release asked for while the order's removed lock is not mined again waits for it, then is mined once", async () => {
  const order = await activeOrder();
  const client = createPublicClient({ transport: http(stack.chain.rpcUrl) });
  const fork = await client.getBlockNumber({ cacheTime: 0 });
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "lock", "Locked");
  await confirmed(order, "LOCKED");
  const lock = await transactionsSince(fork);

  await consumerHeldBack(async () => {
    await reorganise(snapshot, 6);
    await indexed(order.escrowOrderId, "Locked", 0);
    await sandbox(order.id, "pay");
    await waitFor("the release requested", async () => ((await releaseTransactions(order.id)).length === 1 ? true : undefined));
    await sleep(3000); // the sender's first attempts, on an escrow Active
    assert.deepEqual((await releaseTransactions(order.id)).map((row) => row.status), ["PENDING"], "the release waits, not given up");
    for (const raw of lock) await node.rpc("eth_sendRawTransaction", [raw]); // the buyer sends the lock again
    await indexed(order.escrowOrderId, "Locked", 1);
  });

  // The sender's next attempt finds the escrow Locked again (retries back off: within a minute).
  await waitFor("the release mined", async () => ((await indexedEvents(order.escrowOrderId, "Released")).length === 1 ? true : undefined), 90_000);
  await confirmed(order, "COMPLETED");
  await settledTransaction(order.id, "confirmPayment");
  await completedOnce(order.id);
});

/** A sandbox wallet other than the sandbox buyer: a second buyer the service admitted. */
const otherBuyer = privateKeyToAccount(devAccounts[DEV_ACCOUNT.firstSandbox + 5]!.privateKey);

/** The other buyer locks the escrow order with a permit the service signed for it; `fees` sets its tip. */
async function lockAsOtherBuyer(gateway: EscrowGateway, escrowOrderId: Hex, fees: { maxPriorityFeePerGas?: bigint; maxFeePerGas?: bigint } = {}): Promise<void> {
  const permit = { orderId: escrowOrderId, buyer: otherBuyer.address, deadline: lockPermitDeadline() };
  const data = encodeFunctionData({ abi: escrowAbi, functionName: "lock", args: [permit, await gateway.signLockPermit(permit)] });
  await gateway.walletClient(otherBuyer).sendTransaction({ to: stack.chainSettings.escrowAddress, data, ...fees });
}

// A reorganisation beyond the confirmations removed the order's lock and, before its buyer sent it again,
// another buyer locked the escrow. The order, LOCKED by its own buyer, who then paid, asks for the release:
// sent, it would pay the other buyer (the escrow releases to whoever holds its lock).
test("beyond the confirmations, the consumer behind: a release is held while the escrow is locked by another buyer than the order's", async () => {
  const order = await activeOrder();
  const snapshot = await node.rpc("evm_snapshot");
  await acted(order, "lock", "Locked");
  await confirmed(order, "LOCKED");
  const gateway = createEscrowGateway(stack.chainSettings);

  await consumerHeldBack(async () => {
    await reorganise(snapshot, 6);
    await indexed(order.escrowOrderId, "Locked", 0);
    await lockAsOtherBuyer(gateway, order.escrowOrderId as Hex);
    await indexed(order.escrowOrderId, "Locked", 1);

    await sandbox(order.id, "pay");
    await waitFor("the release requested", async () => ((await releaseTransactions(order.id)).length === 1 ? true : undefined));
    await sleep(3000); // the sender's first attempts, on an escrow locked by the other buyer
    assert.deepEqual(await releaseTransactions(order.id), [{ tx_hash: null, status: "PENDING" }], "the release held, never signed");
    const escrow = await gateway.escrowOrder(order.escrowOrderId as Hex);
    assert.deepEqual([escrow.status, escrow.buyer], ["Locked", otherBuyer.address], "nothing released to the other buyer");
  });
  // Caught up, the consumer reports the order's lock gone and is not stuck on the order: the next order's
  // events still reach the service.
  const orphaned = await waitFor("the removed lock reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED"));
  assert.equal(orphaned.data.chainEvent, "Locked");
  await activeOrder();
  assert.deepEqual((await releaseTransactions(order.id)).map((row) => row.status), ["PENDING"], "still held");
});

// As above, but the release was already signed and mined when the reorganisation removed it with the
// lock, and the other buyer's lock is mined before its bytes are mined again (by the service or anyone
// holding them). The release names the order's buyer, so the escrow refuses it: the bytes cannot pay the
// other buyer. The sender reads that from the chain at the revert's block, before the consumer has
// reported anything, and holds the release instead of giving it up.
test("beyond the confirmations, the consumer behind: a release's signed bytes mined after another buyer locked the escrow revert, pay nobody, and the release is held", async () => {
  const order = await activeOrder();
  const gateway = createEscrowGateway(stack.chainSettings);
  const usdcOf = (address: Hex) => gateway.publicClient.readContract({ address: stack.chainSettings.usdcAddress, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });
  const snapshot = await node.rpc("evm_snapshot");
  const branchPoint = await node.blockNumber();
  await acted(order, "lock", "Locked");
  await confirmed(order, "LOCKED");

  await consumerHeldBack(async () => {
    await acted(order, "pay", "Released");
    const [sent] = await releaseTransactions(order.id);
    const release = (await transactionsSince(branchPoint)).find((raw) => keccak256(raw) === sent!.tx_hash)!;
    const otherBalance = await usdcOf(otherBuyer.address);

    await node.rpc("evm_setAutomine", [false]);
    try {
      assert.equal(await node.rpc("evm_revert", [snapshot]), true);
      // A tip far above the service's: the other buyer's lock comes first in the block.
      await lockAsOtherBuyer(gateway, order.escrowOrderId as Hex, { maxPriorityFeePerGas: 50_000_000_000n, maxFeePerGas: 100_000_000_000n });
      // The service may have broadcast the same bytes again already: "known" is the node keeping one copy.
      await gateway.publicClient.sendRawTransaction({ serializedTransaction: release }).catch(() => undefined);
      await node.mine(1);
    } finally {
      await node.rpc("evm_setAutomine", [true]);
    }
    const receipt = await gateway.publicClient.getTransactionReceipt({ hash: sent!.tx_hash as Hex });
    assert.equal(receipt.status, "reverted", "the release's bytes were mined and reverted");
    const [locked] = await gateway.publicClient.getContractEvents({ address: stack.chainSettings.escrowAddress, abi: escrowAbi, eventName: "Locked", blockHash: receipt.blockHash });
    assert.ok(locked && locked.transactionIndex < receipt.transactionIndex, "the other buyer's lock was mined first");
    assert.deepEqual(await gateway.escrowOrder(order.escrowOrderId as Hex), { status: "Locked", buyer: otherBuyer.address });
    assert.equal(await usdcOf(otherBuyer.address), otherBalance, "nothing paid to the other buyer");

    // Past the old branch, the revert final: the sender reads the other buyer's lock at its block.
    await node.mine(6);
    await waitFor("the release back to unsigned", async () => {
      const rows = await releaseTransactions(order.id);
      return rows.length === 1 && rows[0]!.status === "PENDING" && rows[0]!.tx_hash === null ? true : undefined;
    });
  });
  await waitFor("the removed lock reported", async () => (await timeline(order.id)).find((entry) => entry.event === "CHAIN_EVENT_ORPHANED" && entry.data.chainEvent === "Locked"));
  await sleep(2000); // the sender's next attempts find the other buyer's lock and hold the release
  assert.deepEqual(await releaseTransactions(order.id), [{ tx_hash: null, status: "PENDING" }], "held, not given up");
  assert.deepEqual(await gateway.escrowOrder(order.escrowOrderId as Hex), { status: "Locked", buyer: otherBuyer.address });
  assert.equal((await timeline(order.id)).some((entry) => entry.event === "COMPLETED"), false);
});
