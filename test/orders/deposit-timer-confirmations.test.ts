// Decisions 6: a deposit the escrow accepted before its deadline always lists its order, however long its
// confirmations take. On a chain that mines a block every 2 s, with the stack's RPC endpoint 4 blocks
// behind the head (a lagging provider) and 3 confirmations, a deposit mined just before the deadline is
// not yet visible when the deposit timer comes due: the order must wait and turn ACTIVE, never EXPIRED,
// its listing clock starting at the deposit's block.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPublicClient, createWalletClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { startRpcFaultProxy, type RpcFaultProxy } from "../../src/cli/chaos/rpc-proxy.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { placeOrder, startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

const LAG_BLOCKS = 4;
const LISTING_SECONDS = 600;
let proxy: RpcFaultProxy | undefined;
let stack: TradeStack;

before(async () => {
  stack = await startTradeStack({ DEPOSIT_TIMEOUT_SECONDS: "20", CHAIN_CONFIRMATIONS: "3", LISTING_TIMEOUT_SECONDS: String(LISTING_SECONDS) }, {}, {
    mining: "interval",
    rpcFront: async (nodeUrl) => {
      proxy = await startRpcFaultProxy({ upstream: nodeUrl });
      return proxy.url;
    },
  });
  // The lag starts once the stack is up (the indexer's start-up waits for the head it is given).
  proxy!.setFaults({ lagBlocks: LAG_BLOCKS });
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

test("a deposit mined just before the deadline lists its order although the timer came due before the lagging endpoint showed it", { timeout: 180_000 }, async () => {
  // The seller's wallet talks to the node itself, not through the lagging endpoint.
  const node = createPublicClient({ transport: http(stack.chain.rpcUrl) });
  const wallet = createWalletClient({ account: privateKeyToAccount(sandboxAccounts[0]!.privateKey), transport: http(stack.chain.rpcUrl) });
  const seller = wallet.account.address;
  const order = await placeOrder(stack);
  const deposit = order.deposit as { escrowAddress: Address; tokenAddress: Address; amountRaw: string; signature: Hex; terms: Record<string, string> };
  const mined = async (hash: Hex) => {
    const receipt = await node.waitForTransactionReceipt({ hash, pollingInterval: 250 });
    assert.equal(receipt.status, "success");
    return receipt;
  };
  const send = (address: Address, abi: typeof testUsdcAbi | typeof escrowAbi, functionName: string, args: unknown[]) =>
    wallet.writeContract({ address, abi, functionName, args, chain: null } as never);
  await mined(await send(deposit.tokenAddress, testUsdcAbi, "mint", [seller, BigInt(deposit.amountRaw)]));
  await mined(await send(deposit.tokenAddress, testUsdcAbi, "approve", [deposit.escrowAddress, BigInt(deposit.amountRaw)]));

  // Sent 5 s before the deadline: mined 1 to 2 blocks later, while the endpoint shows the chain 4 blocks (8 s) back.
  const deadline = Number(deposit.terms.depositDeadline);
  await sleep(deadline * 1000 - 5_000 - Date.now());
  const t = deposit.terms;
  const terms = { ...t, amount: BigInt(t.amount!), feeBps: Number(t.feeBps), treasuryShareBps: Number(t.treasuryShareBps), depositDeadline: BigInt(t.depositDeadline!), listingWindow: BigInt(t.listingWindow!), lockWindow: BigInt(t.lockWindow!) };
  const receipt = await mined(await send(deposit.escrowAddress, escrowAbi, "deposit", [terms, deposit.signature]));
  const depositTime = Number((await node.getBlock({ blockNumber: receipt.blockNumber })).timestamp);
  assert.ok(depositTime <= deadline, "the escrow accepted the deposit before the deadline");

  const active = await waitForStatus(stack, order.id, "ACTIVE", 90_000);
  assert.deepEqual(active.timeline.map((entry) => entry.event), ["CREATED", "DEPOSIT_CONFIRMED"]);
  // The escrow's listing clock starts at the deposit's block.
  assert.equal(Date.parse(String(active.expiresAt)), (depositTime + LISTING_SECONDS) * 1000);
  assert.ok(proxy!.counts.lagged > 0);
});
