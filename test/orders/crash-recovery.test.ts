import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { keccak256, type Hex } from "viem";
import { createEscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { createTransactionSender, recordTransactionRequest } from "../../src/chain/transaction-sender.ts";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { createLogger } from "../../src/logger.ts";
import { signedCancel } from "../chain/support/signed-cancel.ts";
import { holdUserCreation } from "../support/database.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import type { ServiceProcessSpec } from "../support/service-process.ts";
import { SELLER_CLABE, settleTransaction, startChainStack, waitFor, waitForSettled, type ChainStack } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

let stack: ChainStack;
let pool: Pool;
let service: { process: ChildProcess; baseUrl: string } | undefined;
let apiKey: string;
let partnerId: string;

const spec = (): ServiceProcessSpec => ({
  env: { LOCK_WINDOW_SECONDS: "4" },
  databaseUrl: stack.databaseUrl,
  indexerSchema: stack.indexerSchema,
  chain: stack.chainSettings,
});

/** Starts the service in a child process and waits for it to listen. */
async function startServiceProcess(): Promise<{ process: ChildProcess; baseUrl: string }> {
  const child = spawn(process.execPath, ["test/support/service-process.ts"], {
    env: { ...process.env, OFFRAMP_TEST_SERVICE: JSON.stringify(spec()) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  const baseUrl = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const match = /READY (\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`service exited with ${code} before it was ready`)));
  });
  return { process: child, baseUrl };
}

async function killService(): Promise<void> {
  if (!service) return;
  const exited = once(service.process, "exit");
  service.process.kill("SIGKILL");
  await exited;
  service = undefined;
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${service!.baseUrl}${path}`, {
    method,
    headers: { "Content-Type": "application/json", ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const api = (method: string, path: string, body?: unknown) => call(method, `/api/v1${path}`, body, { "X-API-Key": apiKey });

async function status(orderId: string): Promise<string> {
  const { rows } = await pool.query<{ status: string }>("SELECT status FROM orders WHERE id = $1", [orderId]);
  return rows[0]!.status;
}

before(async () => {
  stack = await startChainStack();
  pool = createPool(stack.databaseUrl);
  service = await startServiceProcess();
  const partner = await call("POST", "/admin/v1/partners", { name: "Crash partner", tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" }, { Authorization: `Bearer ${ADMIN_TOKEN}` });
  apiKey = String(partner.body.apiKey);
  partnerId = String(partner.body.id);
});
after(async () => {
  await killService();
  await pool?.end();
  await stack?.close();
});

describe("a SIGKILL of the service in the middle of a trade", () => {
  test("loses no order, timer or event, and sends no transaction twice", async () => {
    await api("POST", "/users", { partnerUserRef: "crash-user" });
    const quote = await api("POST", "/quotes", { type: "SELL", amountUsdc: 50, partnerUserRef: "crash-user" });
    const order = await api("POST", "/orders", { quoteId: quote.body.id, partnerUserRef: "crash-user", sellerClabe: SELLER_CLABE });
    assert.equal(order.status, 201);
    const orderId = String(order.body.id);

    // Killed right after the deposit is mined, before the consumer can apply it.
    assert.equal((await api("POST", `/sandbox/orders/${orderId}/deposit`)).status, 200);
    await killService();
    service = await startServiceProcess();
    await waitFor("ACTIVE after the restart", async () => ((await status(orderId)) === "ACTIVE" ? true : undefined));

    // Killed right after the lock is mined.
    assert.equal((await api("POST", `/sandbox/orders/${orderId}/lock`)).status, 200);
    await killService();
    service = await startServiceProcess();
    await waitFor("LOCKED after the restart", async () => ((await status(orderId)) === "LOCKED" ? true : undefined));

    // Killed as soon as the lock timer has asked for the refund: the sender may be signing, broadcasting
    // or waiting for the receipt. The 4-second lock timer lives in pg-boss, so it survives the kill.
    await waitFor("the lock expiry refund request", async () => {
      const { rows } = await pool.query("SELECT 1 FROM order_timeline WHERE order_id = $1 AND event = 'LOCK_EXPIRY_REFUND_REQUESTED'", [orderId]);
      return rows.length ? true : undefined;
    }, 30_000);
    await killService();
    await sleep(500);
    service = await startServiceProcess();
    await waitFor("REFUNDED after the restart", async () => ((await status(orderId)) === "REFUNDED" ? true : undefined), 150_000);

    const { rows: refunds } = await pool.query(
      `SELECT count(*)::int AS n FROM "${stack.indexerSchema}".escrow_event WHERE event_name = 'Refunded' AND order_id = $1`,
      [String(order.body.escrowOrderId)],
    );
    assert.equal(refunds[0].n, 1, "one refund on chain");
    const sent = await waitForSettled("the refund", async () => (await pool.query<{ action: string; status: string }>("SELECT action, status FROM chain_transactions WHERE order_id = $1", [orderId])).rows);
    assert.deepEqual(sent, [{ action: "refundExpiredLock", status: "MINED" }]);
    const { rows: events } = await pool.query<{ event_type: string; sequence: number }>("SELECT event_type, sequence FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [orderId]);
    assert.deepEqual(events.map((event) => event.event_type), ["order.created", "order.deposit_confirmed", "order.locked", "order.lock_expired", "order.refunded"]);
    assert.deepEqual(events.map((event) => event.sequence), [1, 2, 3, 4, 5]);
  });
});

describe("an Idempotency-Key whose request died with the service", () => {
  test("is free for the partner's retry, which then runs the request once", async () => {
    const body = { partnerUserRef: "idem-crash" };
    const headers = { "X-API-Key": apiKey, "Idempotency-Key": "idem-crash-1" };
    const hold = await holdUserCreation(pool, partnerId, body.partnerUserRef);
    const first = call("POST", "/api/v1/users", body, headers).catch(() => undefined);
    await hold.inHandler();
    await killService();
    await first;
    await hold.release();

    service = await startServiceProcess();
    const retry = await call("POST", "/api/v1/users", body, headers);
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    const replay = await call("POST", "/api/v1/users", body, headers);
    assert.deepEqual(replay, retry);
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM users WHERE partner_id = $1 AND partner_user_ref = 'idem-crash'", [partnerId]);
    assert.equal(rows[0].n, 1);
  });
});

/**
 * Holds every Idempotency-Key answer at the point it is written, after the handler has done its work:
 * a trigger on the answer's UPDATE waits for a lock the test holds. A kill there is a kill between the
 * handler's change and its answer's commit.
 */
async function holdIdempotencyAnswers(): Promise<{ reached: () => Promise<void>; release: () => Promise<void> }> {
  const lock = 4_242_042;
  await pool.query(`CREATE OR REPLACE FUNCTION test_hold_answer() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock_shared(${lock}); RETURN NEW; END $$`);
  await pool.query(`CREATE TRIGGER test_hold_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW
    WHEN (NEW.response_status IS NOT NULL) EXECUTE FUNCTION test_hold_answer()`);
  const blocker = await pool.connect();
  await blocker.query("SELECT pg_advisory_lock($1)", [lock]);
  return {
    async reached() {
      await waitFor("a request writing its answer", async () => {
        const { rows } = await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE 'UPDATE idempotency_keys%'");
        return rows.length ? true : undefined;
      }, 20_000);
    },
    async release() {
      await blocker.query("SELECT pg_advisory_unlock($1)", [lock]);
      blocker.release();
      await pool.query("DROP TRIGGER test_hold_answer ON idempotency_keys");
    },
  };
}

describe("a SIGKILL between a keyed request's change and the commit of its answer", () => {
  /** Sends the request, kills the service while its answer is being written, restarts it and retries. */
  async function killedWhileAnswering(path: string, body: unknown, key: string): Promise<{ retry: { status: number; body: Json }; replay: { status: number; body: Json } }> {
    const headers = { "X-API-Key": apiKey, "Idempotency-Key": key };
    const hold = await holdIdempotencyAnswers();
    try {
      const first = call("POST", `/api/v1${path}`, body, headers).catch(() => undefined);
      await hold.reached();
      await killService();
      await first;
    } finally {
      await hold.release();
    }
    service = await startServiceProcess();
    return { retry: await call("POST", `/api/v1${path}`, body, headers), replay: await call("POST", `/api/v1${path}`, body, headers) };
  }

  test("POST /quotes retried makes one quote and answers it", async () => {
    await api("POST", "/users", { partnerUserRef: "window-quote" });
    const { retry, replay } = await killedWhileAnswering("/quotes", { type: "SELL", amountUsdc: 7, partnerUserRef: "window-quote" }, "window-quote-1");
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    assert.deepEqual(replay, retry);
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM quotes q JOIN users u ON u.id = q.user_id WHERE u.partner_user_ref = 'window-quote'");
    assert.equal(rows[0].n, 1, "one quote");
  });

  test("POST /users retried creates the user once and answers 201, not DUPLICATE_USER", async () => {
    const { retry, replay } = await killedWhileAnswering("/users", { partnerUserRef: "window-user" }, "window-user-1");
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    assert.deepEqual(replay, retry);
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM users WHERE partner_id = $1 AND partner_user_ref = 'window-user'", [partnerId]);
    assert.equal(rows[0].n, 1);
  });
});

describe("the transaction sender after a crash", () => {
  async function lockedOrderId(): Promise<{ id: string; escrowOrderId: Hex }> {
    const ref = `sender-${Math.random().toString(36).slice(2, 8)}`;
    await api("POST", "/users", { partnerUserRef: ref });
    const quote = await api("POST", "/quotes", { type: "SELL", amountUsdc: 5, partnerUserRef: ref });
    const order = await api("POST", "/orders", { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    const id = String(order.body.id);
    await api("POST", `/sandbox/orders/${id}/deposit`);
    await waitFor("ACTIVE", async () => ((await status(id)) === "ACTIVE" ? true : undefined));
    return { id, escrowOrderId: order.body.escrowOrderId as Hex };
  }

  test("rebroadcasts the stored bytes when the crash came between storing and broadcasting", async () => {
    const { id, escrowOrderId } = await lockedOrderId();
    const gateway = createEscrowGateway(stack.chainSettings);
    // The state a crash leaves after the signed transaction was stored and before it was broadcast.
    const requestId = (await recordTransactionRequest(pool, { orderId: id, action: "cancel", requestKey: `${id}:test-cancel` }))!;
    const nonce = await gateway.publicClient.getTransactionCount({ address: gateway.service.address, blockTag: "pending" });
    const raw = await signedCancel(gateway, stack.chainSettings.escrowAddress, escrowOrderId, nonce);
    await pool.query("UPDATE chain_transactions SET raw_tx = $2, tx_hash = $3, nonce = $4, status = 'SENT' WHERE id = $1", [requestId, raw, keccak256(raw), nonce]);

    const sender = createTransactionSender({ pool, gateway, logger: createLogger("silent") });
    assert.equal(await settleTransaction(sender, requestId), "MINED");
    const receipt = await gateway.publicClient.getTransactionReceipt({ hash: keccak256(raw) });
    assert.equal(receipt.status, "success", "the very bytes stored before the crash were mined");
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });

  test("does not send again when the transaction was mined before the crash", async () => {
    const { id, escrowOrderId } = await lockedOrderId();
    const gateway = createEscrowGateway(stack.chainSettings);
    const sender = createTransactionSender({ pool, gateway, logger: createLogger("silent") });
    const requestId = (await recordTransactionRequest(pool, { orderId: id, action: "cancel", requestKey: `${id}:test-cancel-2` }))!;
    assert.equal(await settleTransaction(sender, requestId), "MINED");
    // A crash before the outcome was recorded: the row still says SENT.
    await pool.query("UPDATE chain_transactions SET status = 'SENT' WHERE id = $1", [requestId]);
    const nonceBefore = await gateway.publicClient.getTransactionCount({ address: gateway.service.address });
    assert.equal(await settleTransaction(sender, requestId), "MINED");
    assert.equal(await gateway.publicClient.getTransactionCount({ address: gateway.service.address }), nonceBefore, "nothing new was sent");
    assert.equal(await gateway.escrowStatus(escrowOrderId), "Refunded");
  });

  test("skips an action the chain has already made pointless", async () => {
    const { id } = await lockedOrderId();
    const gateway = createEscrowGateway(stack.chainSettings);
    const sender = createTransactionSender({ pool, gateway, logger: createLogger("silent") });
    const first = (await recordTransactionRequest(pool, { orderId: id, action: "cancel", requestKey: `${id}:a` }))!;
    const second = (await recordTransactionRequest(pool, { orderId: id, action: "expireListing", requestKey: `${id}:b` }))!;
    assert.equal(await settleTransaction(sender, first), "MINED");
    assert.equal(await sender.process(second), "SKIPPED");
  });
});
