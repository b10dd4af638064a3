// Found by `npm run chaos`: a deposit mined before the deadline but not yet applied to its order (the
// indexer or the service was down) must not let the deposit timer expire the order. EXPIRED is final,
// so the Deposited event arriving afterwards was dropped and the escrow kept the seller's USDC with no
// order to refund it. Here the service runs without the escrow event consumer past the deadline; the
// order must still be PENDING_DEPOSIT, and ACTIVE once a service with the consumer sees the deposit.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { placeOrder, startChainStack, waitFor, waitForStatus, type ChainStack } from "../support/trade-stack.ts";

let chainStack: ChainStack;
let pool: Pool;
const services: TestService[] = [];

before(async () => {
  chainStack = await startChainStack();
  pool = createPool(chainStack.databaseUrl, 2);
});

after(async () => {
  for (const service of services) await service.stop().catch(() => undefined);
  await pool?.end();
  await chainStack?.close();
});

test("the deposit timer leaves an order whose deposit is on chain but not yet indexed to the Deposited event", { timeout: 120_000 }, async () => {
  // No indexerSchema: this instance never hears of the deposit.
  const blind = await startTestService({ DEPOSIT_TIMEOUT_SECONDS: "8" }, { databaseUrl: chainStack.databaseUrl, chain: chainStack.chainSettings });
  services.push(blind);
  const partner = await blind.createPartner({ tier: "ENTERPRISE" });
  const stack = { service: blind, partner };
  const order = await placeOrder(stack, { amountUsdc: 25 });
  const deposited = await blind.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: partner.apiKey });
  assert.equal(deposited.status, 200, JSON.stringify(deposited.body));

  // The timer job runs (completed) after the deadline, and the order is not expired.
  await waitFor(
    "the deposit timer to run",
    async () => {
      const { rows } = await pool.query<{ state: string }>("SELECT state FROM pgboss.job WHERE name = 'orders.timer' AND data->>'orderId' = $1", [order.id]);
      return rows.some((row) => row.state === "completed") ? true : undefined;
    },
    60_000,
  );
  const { rows } = await pool.query<{ status: string }>("SELECT status FROM orders WHERE id = $1", [order.id]);
  assert.equal(rows[0]!.status, "PENDING_DEPOSIT", "the timer did not expire an order whose escrow holds the deposit");
  await blind.stop();

  // A service that consumes the indexer's events applies the deposit.
  const seeing = await startTestService({ DEPOSIT_TIMEOUT_SECONDS: "8" }, { databaseUrl: chainStack.databaseUrl, chain: chainStack.chainSettings, indexerSchema: chainStack.indexerSchema });
  services.push(seeing);
  const active = await waitForStatus({ service: seeing, partner }, order.id, "ACTIVE", 60_000);
  assert.equal(active.timeline.filter((entry) => entry.event === "EXPIRED").length, 0);
});
