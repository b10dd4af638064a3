// Decisions section 13: sandbox helpers may be called concurrently, for many orders at once. Every
// order's deposit comes from sandbox wallet 0, every lock from wallet 1, and disputes from either: each
// wallet's transactions must get distinct nonces, never a 500 for a nonce race. Four partners (four
// clients) drive their orders at once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../support/service.ts";
import { placeOrder, startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

const CLIENTS = 4;
const ORDERS_PER_CLIENT = 4;

let stack: TradeStack;
let partners: TradeStack["partner"][];

before(async () => {
  stack = await startTradeStack();
  partners = [stack.partner];
  for (let i = 1; i < CLIENTS; i += 1) partners.push(await stack.service.createPartner({ tier: "ENTERPRISE" }));
});

after(async () => {
  await stack?.close();
});

test(`${CLIENTS} clients deposit, lock and dispute ${CLIENTS * ORDERS_PER_CLIENT} orders at once from the same sandbox wallets`, async () => {
  const orders = (
    await Promise.all(
      partners.map(async (partner) => {
        const placed = [];
        for (let i = 0; i < ORDERS_PER_CLIENT; i += 1) placed.push({ partner, order: await placeOrder({ service: stack.service, partner }, { amountUsdc: 10 + i }) });
        return placed;
      }),
    )
  ).flat();
  const sandbox = (partner: TradeStack["partner"], orderId: string, action: string, body: unknown = {}) =>
    stack.service.api<{ txHash?: string; error?: string; message?: string }>("POST", `/sandbox/orders/${orderId}/${action}`, { key: partner.apiKey, body });

  const deposits = await Promise.all(orders.map(({ partner, order }) => sandbox(partner, order.id, "deposit")));
  assert.deepEqual(deposits.map((r) => r.status), orders.map(() => 200), `every deposit answered 200: ${JSON.stringify(deposits.filter((r) => r.status !== 200).map((r) => r.body))}`);
  await Promise.all(orders.map(({ partner, order }) => waitForStatus({ service: stack.service, partner }, order.id, "ACTIVE", 60_000)));

  const locks = await Promise.all(orders.map(({ partner, order }) => sandbox(partner, order.id, "lock")));
  assert.deepEqual(locks.map((r) => r.status), orders.map(() => 200), `every lock answered 200: ${JSON.stringify(locks.filter((r) => r.status !== 200).map((r) => r.body))}`);
  await Promise.all(orders.map(({ partner, order }) => waitForStatus({ service: stack.service, partner }, order.id, "LOCKED", 60_000)));

  const disputes = await Promise.all(orders.map(({ partner, order }, i) => sandbox(partner, order.id, "dispute", { by: i % 2 === 0 ? "BUYER" : "SELLER" })));
  assert.deepEqual(disputes.map((r) => r.status), orders.map(() => 200), `every dispute answered 200: ${JSON.stringify(disputes.filter((r) => r.status !== 200).map((r) => r.body))}`);
  await Promise.all(orders.map(({ partner, order }) => waitForStatus({ service: stack.service, partner }, order.id, "DISPUTED", 60_000)));
  const hashes = new Set([...deposits, ...locks, ...disputes].map((r) => r.body.txHash));
  assert.equal(hashes.size, orders.length * 3, "one transaction each");
});

test("two service instances fund wallets through the faucet at once: one sender wallet, distinct nonces, every call 200", async () => {
  // A second instance on the same database and chain (the way the service grows past one machine).
  const second = await startTestService({}, { databaseUrl: stack.databaseUrl, indexerSchema: stack.indexerSchema, chain: stack.chainSettings });
  try {
    const wallets = Array.from({ length: 8 }, () => privateKeyToAccount(generatePrivateKey()).address);
    const answers = await Promise.all(
      wallets.map((address, i) =>
        (i % 2 === 0 ? stack.service : second).api<{ ethTxHash: string; usdcTxHash: string; ethBalance: string; usdcBalance: string }>("POST", "/sandbox/faucet", {
          key: stack.partner.apiKey,
          body: { address, eth: 0.5, usdc: 25 },
        }),
      ),
    );
    assert.deepEqual(answers.map((r) => r.status), wallets.map(() => 200), `every faucet call answered 200: ${JSON.stringify(answers.filter((r) => r.status !== 200).map((r) => r.body))}`);
    assert.deepEqual(answers.map((r) => [r.body.ethBalance, r.body.usdcBalance]), wallets.map(() => ["0.5", "25"]));
    assert.equal(new Set(answers.flatMap((r) => [r.body.ethTxHash, r.body.usdcTxHash])).size, wallets.length * 2, "one transaction each");
  } finally {
    await second.close();
  }
});
