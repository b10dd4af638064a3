// Issue 15: the service signer sends many transactions without waiting for each receipt. Nonces come
// from the signer's counter in PostgreSQL, one per action; a crash, a dropped transaction, a nonce gap
// or a nonce taken by another sender never sends an action twice nor leaves one unsent.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { keccak256, type Hash, type Hex } from "viem";
import { createEscrowGateway, type EscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { createTransactionSender, recordTransactionRequest, TransactionNotYetPossibleError, type TransactionSender } from "../../src/chain/transaction-sender.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { withTransaction } from "../../src/db/pool.ts";
import { createLogger } from "../../src/logger.ts";
import { signedCancel } from "./support/signed-cancel.ts";
import { placeOrder, settleTransaction, startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
let gateway: EscrowGateway;
let sender: TransactionSender;
let active: { id: string; escrowOrderId: Hex }[] = [];

/** `count` orders whose deposits are mined (escrow Active), ready for the service's cancel. */
async function activeOrders(count: number): Promise<{ id: string; escrowOrderId: Hex }[]> {
  const orders = [];
  for (let i = 0; i < count; i += 1) orders.push(await placeOrder(stack, { amountUsdc: 5 }));
  for (const order of orders) {
    const deposit = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
  }
  return orders.map((order) => ({ id: order.id, escrowOrderId: order.escrowOrderId as Hex }));
}

const take = (count: number) => active.splice(0, count);

const minedCount = () => gateway.publicClient.getTransactionCount({ address: gateway.service.address, blockTag: "latest" });

async function rows(ids: string[]) {
  const { rows } = await stack.service.pool.query<{ id: string; status: string; nonce: string | null; tx_hash: Hash | null }>(
    "SELECT id, status, nonce, tx_hash FROM chain_transactions WHERE id = ANY($1) ORDER BY nonce",
    [ids],
  );
  return rows;
}

async function request(orderId: string): Promise<string> {
  return (await recordTransactionRequest(stack.service.pool, { orderId, action: "cancel", requestKey: `${orderId}:cancel` }))!;
}

/** Steps the request until it settles (on an interval-mined chain, until its block comes). */
const settle = (id: string) => settleTransaction(sender, id);

/**
 * A transaction from the service's key that is none of the service's actions (another tool using the
 * key), mined before this returns (at once on an automining chain, in the next block on an interval one).
 */
async function strangerSend(nonce?: number): Promise<Hash> {
  const wallet = gateway.walletClient(gateway.service);
  const hash = await wallet.sendTransaction({ to: gateway.service.address, value: 0n, ...(nonce !== undefined ? { nonce } : {}) });
  await gateway.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 200 });
  return hash;
}

/**
 * What a crash right after storing leaves for request `id`: the counter past `nonce`, the cancel's
 * signed bytes stored under it, nothing broadcast. Returns the bytes.
 */
async function storedNotBroadcast(id: string, escrowOrderId: Hex, nonce: number): Promise<Hex> {
  const raw = await signedCancel(gateway, stack.chainSettings.escrowAddress, escrowOrderId, nonce);
  await storedAt(id, raw, nonce);
  return raw;
}

/** Request `id` stored as sent with `raw` under `nonce`, the signer's counter past it. */
async function storedAt(id: string, raw: Hex, nonce: number): Promise<void> {
  const signer = gateway.service.address.toLowerCase();
  await stack.service.pool.query(
    "INSERT INTO chain_signers (address, next_nonce) VALUES ($1, $2) ON CONFLICT (address) DO UPDATE SET next_nonce = GREATEST(chain_signers.next_nonce, $2)",
    [signer, nonce + 1],
  );
  await stack.service.pool.query("UPDATE chain_transactions SET raw_tx = $2, tx_hash = $3, nonce = $4, from_address = $5, status = 'SENT' WHERE id = $1", [id, raw, keccak256(raw), nonce, signer]);
}

/**
 * Request `id`'s cancel, signed and stored with too little gas to run, broadcast and mined: it reverts
 * (the escrow untouched). Returns the revert's block.
 */
async function revertedAt(id: string, escrowOrderId: Hex): Promise<bigint> {
  const nonce = await minedCount();
  const raw = await signedCancel(gateway, stack.chainSettings.escrowAddress, escrowOrderId, nonce, { gas: 30_000n });
  await storedAt(id, raw, nonce);
  // The automining node mines it, then answers the broadcast with the revert as an error.
  await gateway.publicClient.sendRawTransaction({ serializedTransaction: raw }).catch(() => undefined);
  const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash: keccak256(raw), pollingInterval: 200 });
  assert.equal(receipt.status, "reverted");
  return receipt.blockNumber;
}

/** The order's applied `event` reported removed by a reorganisation, then applied again as mined at `block`. */
async function orphanedThenMinedAgain(orderId: string, event: string, block: bigint): Promise<void> {
  await stack.service.pool.query(
    `INSERT INTO applied_chain_events (event_id, order_id, event_name, block_number, applied_at, orphaned_at)
     VALUES ($1, $3, $4, $5, now() - interval '2 seconds', now() - interval '1 second'), ($2, $3, $4, $6, now(), NULL)`,
    [`removed:${orderId}`, `again:${orderId}`, orderId, event, (block - 3n).toString(), block.toString()],
  );
}

before(async () => {
  // Automine, whatever TRADE_CHAIN says: these cases are built on a node that mines each transaction at
  // once and refuses a nonce gap (a stored transaction is broadcast because the next one is refused). On
  // an interval chain the node queues the later nonce instead and the earlier one is broadcast by its own
  // job; the sender on such a chain is tested in transaction-watch.test.ts and interval-chain.test.ts.
  stack = await startTradeStack({}, {}, { mining: "auto" });
  gateway = createEscrowGateway(stack.chainSettings);
  sender = createTransactionSender({ pool: stack.service.pool, gateway, logger: createLogger("silent") });
  active = await activeOrders(50 + 40 + 8);
});
after(async () => {
  await stack?.close();
});

describe("the service signer's transactions", () => {
  test("50 actions requested at once are each mined exactly once, under contiguous nonces", async () => {
    const orders = take(50);
    const before = await minedCount();
    // Requested the way order transitions request them: the row and its job in one transaction each, all at once.
    const ports = orderEffectPorts(stack.service.boss);
    await Promise.all(orders.map((order) => withTransaction(stack.service.pool, (tx) => ports.sendTransaction(tx, { orderId: order.id, action: "cancel", requestKey: `${order.id}:cancel` }))));
    const { rows: requested } = await stack.service.pool.query<{ id: string }>("SELECT id FROM chain_transactions WHERE order_id = ANY($1)", [orders.map((o) => o.id)]);
    assert.equal(requested.length, 50);
    const ids = requested.map((row) => row.id);
    await waitFor("every request settled by the service's workers", async () => ((await rows(ids)).every((row) => row.status === "MINED") ? true : undefined), 60_000);

    const settled = await rows(ids);
    assert.deepEqual(settled.map((row) => Number(row.nonce)), Array.from({ length: 50 }, (_, i) => before + i), "one nonce each, no gap");
    assert.equal(await minedCount(), before + 50, "nothing else sent from the service's key, nothing twice");
    for (const order of orders) assert.equal(await gateway.escrowStatus(order.escrowOrderId), "Refunded");
  });

  test("a SIGKILL in the middle of a batch leaves the rest to the next process, each sent exactly once", async () => {
    const orders = take(40);
    const before = await minedCount();
    const ids = await Promise.all(orders.map((order) => request(order.id)));
    const run = () =>
      spawn(process.execPath, ["test/chain/support/send-batch.ts"], {
        env: { ...process.env, OFFRAMP_SEND_BATCH: JSON.stringify({ databaseUrl: stack.service.databaseUrl, chain: stack.chainSettings, transactionIds: ids }) },
        stdio: ["ignore", "pipe", "inherit"],
      });
    const first = run();
    const exited = once(first, "exit");
    await waitFor("a few transactions stored", async () => ((await rows(ids)).filter((row) => row.status !== "PENDING").length >= 3 ? true : undefined), 30_000);
    first.kill("SIGKILL");
    await exited;
    const atKill = await rows(ids);
    assert.ok(atKill.some((row) => row.status !== "MINED"), "the kill came before the batch was done");

    const second = run();
    let output = "";
    second.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = await once(second, "exit");
    assert.equal(code, 0);
    assert.match(output, /SETTLED/);

    const settled = await rows(ids);
    assert.ok(settled.every((row) => row.status === "MINED"), JSON.stringify(settled));
    assert.deepEqual(settled.map((row) => Number(row.nonce)), Array.from({ length: 40 }, (_, i) => before + i), "one nonce each, no gap");
    assert.equal(await minedCount(), before + 40, "no action sent twice");
    for (const order of orders) assert.equal(await gateway.escrowStatus(order.escrowOrderId), "Refunded");
  });

  test("a transaction stored but never broadcast (a nonce gap) is broadcast before the next one", async () => {
    const [a, b] = take(2);
    const before = await minedCount();
    const ida = await request(a!.id);
    const idb = await request(b!.id);
    const raw = await storedNotBroadcast(ida, a!.escrowOrderId, before);

    assert.equal(await settle(idb), "MINED");
    assert.equal(await settle(ida), "MINED");
    const settled = await rows([ida, idb]);
    assert.deepEqual(settled.map((row) => [row.id, Number(row.nonce)]), [[ida, before], [idb, before + 1]]);
    assert.equal(settled[0]!.tx_hash, keccak256(raw), "the stored bytes themselves were mined");
    assert.equal(await minedCount(), before + 2);
  });

  test("a nonce used on chain by another sender moves the counter on instead of colliding", async () => {
    const [order] = take(1);
    await strangerSend();
    const chainNext = await minedCount();
    const id = await request(order!.id);
    assert.equal(await settle(id), "MINED");
    const [row] = await rows([id]);
    assert.equal(Number(row!.nonce), chainNext);
    const { rows: signer } = await stack.service.pool.query<{ next_nonce: string }>("SELECT next_nonce FROM chain_signers WHERE address = $1", [gateway.service.address.toLowerCase()]);
    assert.equal(Number(signer[0]!.next_nonce), chainNext + 1);
  });

  test("an action whose stored nonce another transaction consumed is signed anew, once", async () => {
    const [order] = take(1);
    const before = await minedCount();
    const id = await request(order!.id);
    const raw = await storedNotBroadcast(id, order!.escrowOrderId, before);
    // Before the stored bytes reach the node, something else takes their nonce.
    await strangerSend(before);

    assert.equal(await settle(id), "MINED");
    const [row] = await rows([id]);
    assert.equal(Number(row!.nonce), before + 1);
    assert.notEqual(row!.tx_hash, keccak256(raw));
    assert.equal(await minedCount(), before + 2, "the stranger's transaction and the action, once");
    assert.equal(await gateway.escrowStatus(order!.escrowOrderId), "Refunded");
  });

  test("a revert while the escrow was behind the order is signed anew, even when the removed event is back before the receipt is read", async () => {
    const [order] = take(1);
    const id = await request(order!.id);
    const block = await revertedAt(id, order!.escrowOrderId);
    // A reorganisation had removed the order's deposit; the chain mined it again after the revert's block,
    // and the consumer applied it before the sender read the revert (a chaos run: the sender was down).
    await orphanedThenMinedAgain(order!.id, "Deposited", block);

    await assert.rejects(sender.process(id), TransactionNotYetPossibleError);
    const [row] = await rows([id]);
    assert.deepEqual([row!.status === "REVERTED", row!.tx_hash], [false, null], "not given up: back to unsigned");
    assert.equal(await settle(id), "MINED");
    assert.equal(await gateway.escrowStatus(order!.escrowOrderId), "Refunded");
  });

  test("a revert after the removed event was mined again is final", async () => {
    const [order] = take(1);
    const id = await request(order!.id);
    const block = await revertedAt(id, order!.escrowOrderId);
    await orphanedThenMinedAgain(order!.id, "Deposited", block - 1n);

    assert.equal(await settle(id), "REVERTED");
    assert.equal(await gateway.escrowStatus(order!.escrowOrderId), "Active");
  });

  test("asking twice for one action records one request", async () => {
    const [order] = take(1);
    assert.ok(await request(order!.id));
    assert.equal(await recordTransactionRequest(stack.service.pool, { orderId: order!.id, action: "cancel", requestKey: `${order!.id}:cancel` }), undefined);
  });
});
