// A malicious token that calls back into the escrow from inside transfer/transferFrom hits the
// reentrancy guard on every path that moves funds.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeFunctionData, getAddress, keccak256, toHex } from "viem";
import type { Address, Hex } from "viem";
import { disputeOutcome, escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { GRACE, expectRevert, loadFixture, mockTokenAbi } from "./fixtures.ts";
import type { Fixture } from "./fixtures.ts";

async function setup() {
  const f = await loadFixture();
  const token = getAddress((await f.viem.deployContract("ReentrantToken")).address);
  await f.tx(f.admin, "setTokenAllowed", [token, true]);
  const arm = async (target: Address, data: Hex) =>
    f.mined(f.admin.writeContract({ address: token, abi: mockTokenAbi, functionName: "arm", args: [target, data] }));
  const disarm = async () => f.mined(f.admin.writeContract({ address: token, abi: mockTokenAbi, functionName: "disarm", args: [] }));
  return { f, token, arm, disarm };
}

async function lockedOrder(f: Fixture, token: Address) {
  return f.depositAndLock({ token, amount: 1000n, feeBps: 1000, treasuryShareBps: 5000 });
}

describe("reentrancy guard", () => {
  it("deposit: a token re-entering from transferFrom is stopped", async () => {
    const { f, token, arm } = await setup();
    const victim = await f.deposit({ token, amount: 10n });
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "cancel", args: [victim.terms.orderId] }));
    await expectRevert(f.deposit({ token, amount: 10n }), "ReentrancyGuardReentrantCall");
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "expireListing", args: [victim.terms.orderId] }));
    await expectRevert(f.deposit({ token, amount: 10n }), "ReentrancyGuardReentrantCall");
  });

  it("confirmPayment: re-entering to refund or dispute the order being paid is stopped", async () => {
    const { f, token, arm, disarm } = await setup();
    const terms = await lockedOrder(f, token);
    const cep = keccak256(toHex("reentrancy-cep"));
    await f.travel(terms.lockWindow);
    for (const data of [
      encodeFunctionData({ abi: escrowAbi, functionName: "refundExpiredLock", args: [terms.orderId] }),
      encodeFunctionData({ abi: escrowAbi, functionName: "confirmPayment", args: [terms.orderId, keccak256(toHex("other")), f.buyer.account.address] }),
      encodeFunctionData({ abi: escrowAbi, functionName: "openDispute", args: [terms.orderId] }),
    ]) {
      await arm(f.escrow, data);
      await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, cep, f.buyer.account.address]), "ReentrancyGuardReentrantCall");
    }
    await disarm();
    await f.tx(f.service, "confirmPayment", [terms.orderId, cep, f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
    // What stays is exactly the fee credited to the partner and the treasury, to withdraw.
    assert.equal(await f.balanceOf(f.escrow, token), 100n);
    assert.equal(await f.read("totalAccrued", [token]), 100n);
  });

  it("refunds (cancel, expireListing, refundExpiredLock): re-entering is stopped", async () => {
    const { f, token, arm } = await setup();
    const active = await f.deposit({ token, amount: 10n, listingWindow: 100n });
    const locked = await lockedOrder(f, token);
    await f.travel(locked.lockWindow + GRACE);
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "refundExpiredLock", args: [locked.orderId] }));
    await expectRevert(f.send(f.service, "cancel", [active.terms.orderId]), "ReentrancyGuardReentrantCall");
    await expectRevert(f.send(f.stranger, "expireListing", [active.terms.orderId]), "ReentrancyGuardReentrantCall");
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "expireListing", args: [active.terms.orderId] }));
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [locked.orderId]), "ReentrancyGuardReentrantCall");
  });

  it("resolveDispute: re-entering from the payout is stopped", async () => {
    const { f, token, arm } = await setup();
    const terms = await lockedOrder(f, token);
    await f.tx(f.buyer, "openDispute", [terms.orderId]);
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "resolveDispute", args: [terms.orderId, disputeOutcome.SELLER, f.buyer.account.address] }));
    await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.BUYER, f.buyer.account.address]), "ReentrancyGuardReentrantCall");
    await expectRevert(f.send(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_REFUND, f.buyer.account.address]), "ReentrancyGuardReentrantCall");
  });

  it("withdraw and recoverTokens: re-entering from the payout is stopped", async () => {
    const { f, token, arm, disarm } = await setup();
    const terms = await lockedOrder(f, token);
    await f.tx(f.service, "confirmPayment", [terms.orderId, keccak256(toHex("reentrancy-withdraw")), f.buyer.account.address]);
    const treasury = f.wallet(3);
    // The treasury's credit (50 units) re-entered to be withdrawn twice, and a stray-token recovery.
    await arm(f.escrow, encodeFunctionData({ abi: escrowAbi, functionName: "withdraw", args: [token] }));
    await expectRevert(f.send(treasury, "withdraw", [token]), "ReentrancyGuardReentrantCall");
    await f.mined(f.admin.writeContract({ address: token, abi: mockTokenAbi, functionName: "mint", args: [f.escrow, 7n] }));
    await expectRevert(f.send(f.admin, "recoverTokens", [token, f.treasury, 7n]), "ReentrancyGuardReentrantCall");
    await disarm();
    await f.tx(treasury, "withdraw", [token]);
    assert.equal(await f.balanceOf(f.treasury, token), 50n);
    await f.tx(f.admin, "recoverTokens", [token, f.treasury, 7n]);
    assert.equal(await f.balanceOf(f.escrow, token), 50n); // the partner's credit, still owed
  });

  it("control: the hook really runs inside escrow transfers (a harmless callback succeeds)", async () => {
    const { f, token, arm } = await setup();
    const { terms } = await f.deposit({ token, amount: 10n });
    const marker = f.stranger.account.address;
    await arm(f.usdc, encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [marker, 1n] }));
    const before = await f.balanceOf(marker);
    await f.tx(f.service, "cancel", [terms.orderId]);
    assert.equal((await f.balanceOf(marker)) - before, 1n);
  });
});
