// Lock-permit refusals in the order of decisions 17: NOT_FOUND, ORDER_NOT_AVAILABLE, BUYER_SUSPENDED,
// USER_SANCTIONED, KYC_REQUIRED (BASIC; FULL once the month reaches 50,000 MXN), LOCK_LIMIT_REACHED. The
// issuer is the service's own (marketPermits over the escrow gateway's signer) on a real database; each
// test makes a buyer fail several checks at once and expects the first of them. Orders are placed through
// the API with the offline chain and then put in the state the indexer would leave them in.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { verifyTypedData, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createEscrowGateway } from "../../src/chain/escrow-gateway.ts";
import { escrowEip712Domain, lockPermitTypes } from "../../src/chain/escrow-abi.ts";
import { loadSanctionsList } from "../../src/domain/sanctions.ts";
import { ensureBuyer, setBuyerStatus } from "../../src/market/buyers.ts";
import { applyOrderEvent } from "../../src/orders/store.ts";
import { orderEffectPorts } from "../../src/workers/order-effects.ts";
import { buyerPolicy, marketPermits } from "../../src/market/module.ts";
import type { PermitIssuer } from "../../src/market/permits.ts";
import type { TestService } from "../support/service.ts";
import { OFFLINE_CHAIN, placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";
import { withinOrWaiting } from "../support/until.ts";

let service: TestService;
let partner: { id: string; apiKey: string; webhookSecret: string };
let issue: PermitIssuer;
let sanctionsDir: string;
const sanctioned = privateKeyToAccount(generatePrivateKey()).address;
const sanctionedAndSuspended = privateKeyToAccount(generatePrivateKey()).address;

before(async () => {
  service = await startOfflineOrderService();
  partner = await service.createPartner({ name: "Permit Partner", tier: "ENTERPRISE" });
  sanctionsDir = await mkdtemp(path.join(tmpdir(), "permits-sdn-"));
  const file = path.join(sanctionsDir, "sdn.csv");
  await writeFile(
    file,
    `36001,"TEST, Listed Wallet","individual","CYBER2",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"Digital Currency Address - ETH ${sanctioned}; Digital Currency Address - ETH ${sanctionedAndSuspended};"\n`,
  );
  const sanctions = await loadSanctionsList([file]);
  assert.ok(sanctions.isSanctioned(sanctioned) && sanctions.isSanctioned(sanctionedAndSuspended));
  issue = marketPermits({ config: service.config, pool: service.pool, gateway: createEscrowGateway(OFFLINE_CHAIN), sanctions });
});
after(async () => {
  await service?.close();
  if (sanctionsDir) await rm(sanctionsDir, { recursive: true, force: true });
});

const newWallet = (): Address => privateKeyToAccount(generatePrivateKey()).address;

/** An order listed to buyers (ACTIVE) until `listedFor` ms from now, as the indexer leaves it after the deposit. */
async function listedOrder(listedFor = 3_600_000, totalMxn?: string): Promise<{ id: string; escrowOrderId: string; expiresAt: Date }> {
  const order = await placeOrder({ service, partner });
  const expiresAt = new Date(Date.now() + listedFor);
  await service.pool.query("UPDATE orders SET status = 'ACTIVE', expires_at = $2, total_mxn = coalesce($3, total_mxn) WHERE id = $1", [order.id, expiresAt, totalMxn ?? null]);
  return { id: order.id, escrowOrderId: order.escrowOrderId, expiresAt };
}

async function refusal(wallet: string, escrowOrderId: string, now?: Date): Promise<{ status: number; code: string }> {
  try {
    await issue(wallet, escrowOrderId, now ? { now } : {});
  } catch (error) {
    const { status, code } = error as { status: number; code: string };
    return { status, code };
  }
  assert.fail("the permit was issued");
}

async function setKyc(wallet: string, tier: "NONE" | "BASIC" | "FULL") {
  await ensureBuyer(service.pool, buyerPolicy(service.config), wallet);
  await service.pool.query("UPDATE buyers SET kyc_status = $2, kyc_tier = $3, kyc_completed_at = now() WHERE wallet = $1", [
    wallet.toLowerCase(),
    tier === "NONE" ? "NOT_REQUIRED" : "APPROVED",
    tier,
  ]);
}

/** An operator's suspension (7 days), of a buyer without KYC. */
async function suspended(wallet: string) {
  await setKyc(wallet, "NONE");
  await setBuyerStatus(service.pool, wallet, "SUSPENDED");
}

/** A trade this buyer completed this month for `totalMxn` pesos (its monthly volume). */
async function completedTrade(wallet: string, totalMxn: string) {
  const order = await placeOrder({ service, partner });
  await service.pool.query("UPDATE orders SET status = 'COMPLETED', buyer_wallet = $2, total_mxn = $3, completed_at = now() WHERE id = $1", [order.id, wallet, totalMxn]);
}

test("a permit is issued while a transition of the order holds the order's row", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "FULL");
  const order = await listedOrder();
  const transition = await service.pool.connect();
  try {
    await transition.query("BEGIN");
    const applied = await applyOrderEvent(
      service.pool,
      orderEffectPorts(service.boss),
      order.id,
      { type: "DEPOSIT_CONFIRMED", txHash: `0x${"01".repeat(32)}`, seller: newWallet(), listingExpiresAt: order.expiresAt.toISOString(), at: new Date().toISOString() },
      { tx: transition },
    );
    assert.equal(applied.changed, true);
    // The permit's row references the order: its foreign key check takes a key-share lock on the order's row.
    const issued = await withinOrWaiting(issue(wallet, order.escrowOrderId));
    assert.notEqual(issued, "waiting", "the permit waited for the order's transition to commit");
  } finally {
    await transition.query("ROLLBACK").catch(() => undefined);
    transition.release();
  }
});

test("an unknown order, or a malformed id, is NOT_FOUND before anything else (even for a sanctioned wallet)", async () => {
  assert.deepEqual(await refusal(sanctioned, `0x${"ab".repeat(32)}`), { status: 404, code: "NOT_FOUND" });
  assert.deepEqual(await refusal(sanctioned, "not-an-order-id"), { status: 404, code: "NOT_FOUND" });
});

test("an expired listing, or an order no longer ACTIVE, is ORDER_NOT_AVAILABLE, before suspension, sanctions and KYC", async () => {
  const order = await listedOrder();
  await suspended(sanctionedAndSuspended);
  const afterListing = new Date(order.expiresAt.getTime() + 1000);
  assert.deepEqual(await refusal(sanctionedAndSuspended, order.escrowOrderId, afterListing), { status: 409, code: "ORDER_NOT_AVAILABLE" });
  await service.pool.query("UPDATE orders SET status = 'LOCKED', buyer_wallet = $2 WHERE id = $1", [order.id, newWallet().toLowerCase()]);
  assert.deepEqual(await refusal(sanctionedAndSuspended, order.escrowOrderId), { status: 409, code: "ORDER_NOT_AVAILABLE" });
});

test("suspended, sanctioned and without KYC: BUYER_SUSPENDED comes first", async () => {
  const order = await listedOrder();
  await suspended(sanctionedAndSuspended);
  assert.deepEqual(await refusal(sanctionedAndSuspended, order.escrowOrderId), { status: 403, code: "BUYER_SUSPENDED" });
});

test("sanctioned and without KYC (not a sandbox wallet): USER_SANCTIONED", async () => {
  const order = await listedOrder();
  await setKyc(sanctioned, "NONE");
  assert.deepEqual(await refusal(sanctioned, order.escrowOrderId), { status: 403, code: "USER_SANCTIONED" });
});

test("without KYC and over the monthly threshold: KYC_REQUIRED, before the lock limit", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "NONE");
  await completedTrade(wallet, "50000");
  const orders = [await listedOrder(), await listedOrder(), await listedOrder(), await listedOrder()];
  // Holding the default 3 locks as well: KYC is checked before the limit.
  for (const order of orders.slice(0, 3)) await service.pool.query("UPDATE orders SET status = 'LOCKED', buyer_wallet = $2 WHERE id = $1", [order.id, wallet.toLowerCase()]);
  assert.deepEqual(await refusal(wallet, orders[3]!.escrowOrderId), { status: 403, code: "KYC_REQUIRED" });
});

test("a BASIC buyer locks below 50,000 MXN this month; once the month reaches it, KYC_REQUIRED (FULL)", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "BASIC");
  await completedTrade(wallet, "40000");
  // Completed 40,000 and this order's 9,999.99: below the threshold.
  const order = await listedOrder(3_600_000, "9999.99");
  await issue(wallet, order.escrowOrderId);
  await completedTrade(wallet, "0.01");
  const next = await listedOrder(3_600_000, "9999.99");
  assert.deepEqual(await refusal(wallet, next.escrowOrderId), { status: 403, code: "KYC_REQUIRED" });
  await setKyc(wallet, "FULL");
  await issue(wallet, next.escrowOrderId);
});

test("a BASIC buyer without history cannot lock an order of 50,000 MXN or more: the order itself counts", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "BASIC");
  const large = await listedOrder(3_600_000, "50000");
  assert.deepEqual(await refusal(wallet, large.escrowOrderId), { status: 403, code: "KYC_REQUIRED" });
  await issue(wallet, (await listedOrder(3_600_000, "49999.99")).escrowOrderId);
});

test("open locks count in the month: a BASIC buyer holding 30,000 MXN locked cannot lock 20,000 more without FULL", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "BASIC");
  const held = await listedOrder(3_600_000, "30000");
  await service.pool.query("UPDATE orders SET status = 'DISPUTED', buyer_wallet = $2 WHERE id = $1", [held.id, wallet.toLowerCase()]);
  const next = await listedOrder(3_600_000, "20000");
  assert.deepEqual(await refusal(wallet, next.escrowOrderId), { status: 403, code: "KYC_REQUIRED" });
  // 19,999.99 more stays below: BASIC is enough.
  await issue(wallet, (await listedOrder(3_600_000, "19999.99")).escrowOrderId);
});

test("an unexpired permit counts in the month as a lock: two permits of 30,000 MXN need FULL", async () => {
  const wallet = newWallet();
  await setKyc(wallet, "BASIC");
  await issue(wallet, (await listedOrder(3_600_000, "30000")).escrowOrderId);
  const second = await listedOrder(3_600_000, "30000");
  assert.deepEqual(await refusal(wallet, second.escrowOrderId), { status: 403, code: "KYC_REQUIRED" });
  // Once the first permit's 2 minutes are over, it no longer counts.
  await issue(wallet, second.escrowOrderId, { now: new Date(Date.now() + 121_000) });
});

test("the default limit: 3 locks or unexpired permits at once, the 4th LOCK_LIMIT_REACHED; permits are signed for the escrow", async () => {
  assert.equal(service.config.buyerMaxOpenLocks, 3);
  const wallet = newWallet();
  await setKyc(wallet, "BASIC");
  const [locked, ...others] = [await listedOrder(), await listedOrder(), await listedOrder(), await listedOrder()];
  await service.pool.query("UPDATE orders SET status = 'LOCKED', buyer_wallet = $2 WHERE id = $1", [locked!.id, wallet.toLowerCase()]);
  const first = await issue(wallet, others[0]!.escrowOrderId);
  assert.equal(first.permit.buyer, wallet);
  assert.ok(
    await verifyTypedData({
      address: privateKeyToAccount(OFFLINE_CHAIN.servicePrivateKey).address,
      domain: { ...escrowEip712Domain, chainId: OFFLINE_CHAIN.chainId, verifyingContract: OFFLINE_CHAIN.escrowAddress },
      types: lockPermitTypes,
      primaryType: "LockPermit",
      message: first.forContract,
      signature: first.signature as Hex,
    }),
  );
  await issue(wallet, others[1]!.escrowOrderId);
  // One lock and two unexpired permits: 3.
  assert.deepEqual(await refusal(wallet, others[2]!.escrowOrderId), { status: 403, code: "LOCK_LIMIT_REACHED" });
  // Asking again for an order already permitted is not another lock.
  await issue(wallet, others[1]!.escrowOrderId);
  // Once the permits' 2 minutes are over, they no longer count.
  const later = new Date(Date.now() + 121_000);
  await issue(wallet, others[2]!.escrowOrderId, { now: later });
});
