// Decisions 7, issue 22: RPC_URL lists several endpoints and the service and the indexer fail over
// between them. With the first endpoint dead, trades go through the second; with every endpoint down, a
// request that needs the chain answers 503 CHAIN_UNAVAILABLE with Retry-After, never 500.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startRpcFaultProxy, type RpcFaultProxy } from "../../src/cli/chaos/rpc-proxy.ts";
import { closedPort } from "../support/service.ts";
import { placeOrder, startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { completedTrade } from "../support/trade-paths.ts";

let proxy: RpcFaultProxy | undefined;
let stack: TradeStack;
before(async () => {
  const dead = `http://127.0.0.1:${await closedPort()}`;
  stack = await startTradeStack({}, {}, {
    rpcFront: async (nodeUrl) => {
      proxy = await startRpcFaultProxy({ upstream: nodeUrl });
      return `${dead},${proxy.url}`;
    },
  });
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

test("with the first of two RPC endpoints dead, a trade completes through the second", async () => {
  assert.equal(stack.chainSettings.rpcUrl.split(",").length, 2);
  const detail = await completedTrade(stack, 60_000);
  assert.match(String(detail.releaseTxHash), /^0x[0-9a-f]{64}$/);
});

test("with every RPC endpoint down, a sandbox deposit answers 503 CHAIN_UNAVAILABLE with Retry-After, and works once one is back", async () => {
  const order = await placeOrder(stack);
  proxy!.setFaults({ dead: true });
  let refused;
  try {
    refused = await stack.service.api<{ error: string }>("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  } finally {
    proxy!.setFaults({ dead: false });
  }
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal(refused.body.error, "CHAIN_UNAVAILABLE");
  assert.match(refused.headers.get("retry-after") ?? "", /^\d+$/);
  assert.ok(proxy!.counts.deadRefused > 0);

  const deposited = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  assert.equal(deposited.status, 200, JSON.stringify(deposited.body));
  await waitForStatus(stack, order.id, "ACTIVE", 60_000);
});
