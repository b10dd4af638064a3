// Decisions 7, issue 22: the service and the indexer behind an RPC endpoint that errs as public providers
// do (5 % HTTP 429, 3 % 5xx, 2 % connections reset, 0 to 150 ms added): trades still go through and no
// request fails on a refusal a retry gets past (the 500s of every sandbox wallet send and faucet call
// whose eth_sendRawTransaction met one).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PUBLIC_PROVIDER_FAULTS, startRpcFaultProxy, type RpcFaultProxy } from "../../src/cli/chaos/rpc-proxy.ts";
import { startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { cancelledTrade, completedTrade, depositExpiry } from "../support/trade-paths.ts";

let proxy: RpcFaultProxy | undefined;
let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ DEPOSIT_TIMEOUT_SECONDS: "20" }, {}, {
    rpcFront: async (nodeUrl) => {
      proxy = await startRpcFaultProxy({ upstream: nodeUrl, faults: PUBLIC_PROVIDER_FAULTS });
      return proxy.url;
    },
  });
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

test("behind an erring RPC a trade completes", async () => {
  const detail = await completedTrade(stack, 60_000);
  assert.match(String(detail.releaseTxHash), /^0x[0-9a-f]{64}$/);
});

test("behind an erring RPC a cancelled order is refunded on chain", async () => {
  const detail = await cancelledTrade(stack, 60_000);
  assert.match(String(detail.refundTxHash), /^0x[0-9a-f]{64}$/);
});

test("behind an erring RPC an order nobody deposits for expires", async () => {
  const detail = await depositExpiry(stack, 60_000);
  assert.deepEqual(detail.timeline.map((entry) => entry.event), ["CREATED", "EXPIRED"]);
});

test("behind an erring RPC every faucet call funds its wallet", async () => {
  for (let i = 0; i < 8; i += 1) {
    const address = `0x${(0xfa0cede0 + i).toString(16).padStart(40, "0")}`;
    const response = await stack.service.api<{ ethBalance: string; usdcBalance: string }>("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address, eth: 0.5, usdc: 10 } });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.ethBalance, "0.5");
    assert.equal(response.body.usdcBalance, "10");
  }
});

test("the proxy refused, failed and cut requests of every kind meanwhile", () => {
  const counts = proxy!.counts;
  assert.ok(counts.rateLimited > 0 && counts.serverError > 0 && counts.resetBefore + counts.resetAfter > 0, JSON.stringify(counts));
});
