// The deposit terms the service signs are kept with the order when they are signed. They used to be
// rebuilt from the current configuration wherever they were shown or used (order view, admin view,
// sandbox deposit), so an order created before LISTING_TIMEOUT_SECONDS or LOCK_WINDOW_SECONDS changed
// showed terms its signature no longer matched, and its deposit reverted. Here: an order is created, the
// service restarts with other windows, and the order still shows its signed terms, which verify against
// the signature, and its sandbox deposit goes through with them.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { verifyTypedData, type Address, type Hex } from "viem";
import { escrowAbi, escrowEip712Domain, orderTermsTypes } from "../../src/chain/escrow-abi.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { placeOrder, startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

interface Deposit {
  terms: Record<string, string | number>;
  signature: Hex;
}

let stack: TradeStack;
let restarted: TestService | undefined;

before(async () => {
  stack = await startTradeStack({ LISTING_TIMEOUT_SECONDS: "7200", LOCK_WINDOW_SECONDS: "3600" });
});

after(async () => {
  await restarted?.stop();
  await stack?.close();
});

function verify(deposit: Deposit) {
  const t = deposit.terms;
  return verifyTypedData({
    address: devAccounts[DEV_ACCOUNT.service].address,
    domain: { ...escrowEip712Domain, chainId: stack.deployment.chainId, verifyingContract: stack.deployment.escrowAddress },
    types: orderTermsTypes,
    primaryType: "OrderTerms",
    message: {
      orderId: t.orderId as Hex,
      token: t.token as Address,
      amount: BigInt(t.amount!),
      feeBps: Number(t.feeBps),
      feeRecipient: t.feeRecipient as Address,
      treasuryShareBps: Number(t.treasuryShareBps),
      depositDeadline: BigInt(t.depositDeadline!),
      listingWindow: BigInt(t.listingWindow!),
      lockWindow: BigInt(t.lockWindow!),
    },
    signature: deposit.signature,
  });
}

test("an order keeps the terms it was signed with across a restart with other windows", async () => {
  const created = (await placeOrder(stack, { amountUsdc: 30 })) as unknown as { id: string; escrowOrderId: Hex; deposit: Deposit };
  assert.equal(created.deposit.terms.listingWindow, "7200");
  assert.equal(created.deposit.terms.lockWindow, "3600");
  assert.ok(await verify(created.deposit), "the created order's terms verify");

  await stack.service.stop();
  restarted = await startTestService(
    { LISTING_TIMEOUT_SECONDS: "90000", LOCK_WINDOW_SECONDS: "5400" },
    { databaseUrl: stack.databaseUrl, indexerSchema: stack.indexerSchema, chain: stack.chainSettings },
  );
  const service = restarted;
  const shown = await service.api<{ deposit: Deposit }>("GET", `/orders/${created.id}`, { key: stack.partner.apiKey });
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.deposit.terms, created.deposit.terms, "GET /orders/:id shows the signed terms");
  assert.equal(shown.body.deposit.signature, created.deposit.signature);
  assert.ok(await verify(shown.body.deposit), "and they verify against the signature");
  const admin = await service.admin<{ deposit: Deposit }>("GET", `/orders/${created.id}`);
  assert.equal(admin.status, 200);
  assert.deepEqual(admin.body.deposit.terms, created.deposit.terms, "the admin view shows the signed terms");

  // A new order is signed with the new windows.
  const fresh = (await placeOrder({ service, partner: stack.partner }, { amountUsdc: 31 })) as unknown as { deposit: Deposit };
  assert.equal(fresh.deposit.terms.listingWindow, "90000");
  assert.ok(await verify(fresh.deposit));

  const deposit = await service.api<{ txHash?: string }>("POST", `/sandbox/orders/${created.id}/deposit`, { key: stack.partner.apiKey, body: {} });
  assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
  await waitForStatus({ service, partner: stack.partner }, created.id, "ACTIVE", 30_000);
  const onChain = (await service.chain!.gateway.publicClient.readContract({ address: stack.deployment.escrowAddress, abi: escrowAbi, functionName: "getOrder", args: [created.escrowOrderId] })) as Record<string, unknown>;
  assert.equal(String(onChain.lockWindow), "3600", "the escrow holds the signed lock window");
});
