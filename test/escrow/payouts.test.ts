// Pull payments of fee shares (decisions 5) and the recovery of stray tokens (decisions 19).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, keccak256, toHex } from "viem";
import type { Address } from "viem";
import { DEFAULT_ADMIN_ROLE } from "../../src/stack/deploy.ts";
import { disputeOutcome, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { USDC, assertEvent, escrowEvents, expectRevert, loadFixture, mockTokenAbi, zeroAddress } from "./fixtures.ts";
import type { Fixture } from "./fixtures.ts";

let cepCounter = 0;
const newCep = () => keccak256(toHex(`payout-cep-${++cepCounter}`));

async function blacklistToken(f: Fixture): Promise<Address> {
  const token = getAddress((await f.viem.deployContract("BlacklistToken")).address);
  await f.tx(f.admin, "setTokenAllowed", [token, true]);
  return token;
}

const blacklist = (f: Fixture, token: Address, account: Address, blocked = true) =>
  f.mined(f.admin.writeContract({ address: token, abi: mockTokenAbi, functionName: "setBlacklisted", args: [account, blocked] }));

describe("pull payments of fee shares", () => {
  it("a fee recipient and a treasury that cannot receive the token never block a release", async () => {
    const f = await loadFixture();
    const token = await blacklistToken(f);
    const terms = await f.depositAndLock({ token, amount: 100n * USDC, feeBps: 1000, treasuryShareBps: 3000 });
    await blacklist(f, token, f.partner);
    await blacklist(f, token, f.treasury);
    const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    assert.equal(escrowEvents(receipt, f.escrow)[0]?.eventName, "Released");
    assert.equal(await f.balanceOf(f.buyer.account.address, token), 90n * USDC);
    assert.equal(await f.read("accrued", [f.partner, token]), 7n * USDC);
    assert.equal(await f.read("accrued", [f.treasury, token]), 3n * USDC);
    // The blacklisted partner cannot take its share out to itself, but can send it elsewhere.
    const partner = f.wallet(7);
    await expectRevert(f.send(partner, "withdraw", [token]), "Blacklisted", [f.partner]);
    const elsewhere = getAddress(f.wallet(8).account.address);
    const r = await f.tx(partner, "withdrawTo", [token, elsewhere]);
    assertEvent(escrowEvents(r, f.escrow)[0], "Withdrawn", { account: f.partner, token, to: elsewhere, amount: 7n * USDC });
    assert.equal(await f.balanceOf(elsewhere, token), 7n * USDC);
  });

  it("a dispute release (BUYER outcome) credits the same way; a seller that cannot receive its USER fee does not block it", async () => {
    const f = await loadFixture();
    const token = await blacklistToken(f);
    const terms = await f.depositAndLock({ token, amount: 50n * USDC, feeBps: 200, treasuryShareBps: 5000, feeRecipient: zeroAddress });
    await f.tx(f.buyer, "openDispute", [terms.orderId]);
    await blacklist(f, token, f.seller.account.address);
    await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.BUYER, f.buyer.account.address]);
    assert.equal(await f.balanceOf(f.buyer.account.address, token), 49n * USDC);
    assert.equal(await f.read("accrued", [f.seller.account.address, token]), 500_000n);
    assert.equal(await f.read("accrued", [f.treasury, token]), 500_000n);
  });

  it("withdraw pays the owner's whole credit once; a second call has nothing; others cannot take it", async () => {
    const f = await loadFixture();
    const a = await f.depositAndLock({ amount: 100n * USDC, feeBps: 100, treasuryShareBps: 3000 });
    const b = await f.depositAndLock({ amount: 200n * USDC, feeBps: 100, treasuryShareBps: 3000 });
    await f.tx(f.service, "confirmPayment", [a.orderId, newCep(), f.buyer.account.address]);
    await f.tx(f.service, "confirmPayment", [b.orderId, newCep(), f.buyer.account.address]);
    // Partner: 0.7 + 1.4 USDC; treasury 0.3 + 0.6 USDC.
    assert.equal(await f.read("accrued", [f.partner, f.usdc]), 2_100_000n);
    assert.equal(await f.read("totalAccrued", [f.usdc]), 3n * USDC);
    const partner = f.wallet(7);
    const treasury = f.wallet(3);
    await expectRevert(f.send(f.stranger, "withdraw", [f.usdc]), "NothingToWithdraw");
    const receipt = await f.tx(partner, "withdraw", [f.usdc]);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Withdrawn", { account: f.partner, token: f.usdc, to: f.partner, amount: 2_100_000n });
    assert.equal(await f.balanceOf(f.partner), 2_100_000n);
    assert.equal(await f.read("accrued", [f.partner, f.usdc]), 0n);
    await expectRevert(f.send(partner, "withdraw", [f.usdc]), "NothingToWithdraw");
    await expectRevert(f.send(treasury, "withdrawTo", [f.usdc, zeroAddress]), "ZeroAddress");
    await f.tx(treasury, "withdraw", [f.usdc]);
    assert.equal(await f.balanceOf(f.treasury), 900_000n);
    assert.equal(await f.read("totalAccrued", [f.usdc]), 0n);
    assert.equal(await f.balanceOf(f.escrow), 0n);
  });

  it("withdraw is blocked while paused and works again after", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ feeBps: 100, treasuryShareBps: 0 });
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    await f.tx(f.admin, "pause", []);
    await expectRevert(f.send(f.wallet(7), "withdraw", [f.usdc]), "EnforcedPause");
    await f.tx(f.admin, "unpause", []);
    await f.tx(f.wallet(7), "withdraw", [f.usdc]);
    assert.equal(await f.balanceOf(f.partner), USDC);
  });

  it("a credit stays with the treasury it was credited to after setTreasury", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ feeBps: 1000, treasuryShareBps: 10_000 });
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    const next = getAddress(f.wallet(9).account.address);
    await f.tx(f.admin, "setTreasury", [next]);
    const later = await f.depositAndLock({ feeBps: 1000, treasuryShareBps: 10_000 });
    await f.tx(f.service, "confirmPayment", [later.orderId, newCep(), f.buyer.account.address]);
    assert.equal(await f.read("accrued", [f.treasury, f.usdc]), 10n * USDC);
    assert.equal(await f.read("accrued", [next, f.usdc]), 10n * USDC);
  });

  it("a partner without a fee wallet: the terms name the treasury, which is credited the whole fee", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ amount: 100n * USDC, feeBps: 300, treasuryShareBps: 2000, feeRecipient: f.treasury });
    const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    const event = escrowEvents(receipt, f.escrow)[0];
    assert.ok(event?.eventName === "Released");
    // The partner's part (2.4 USDC, owed to it off-chain) and the service's share (0.6) both to the treasury.
    assert.deepEqual([getAddress(event.args.feeRecipient), event.args.feeAmount, event.args.treasuryAmount], [f.treasury, 2_400_000n, 600_000n]);
    assert.equal(await f.read("accrued", [f.treasury, f.usdc]), 3n * USDC);
  });
});

describe("recoverTokens (stray tokens only)", () => {
  it("the admin recovers what was sent outside any order, never escrowed or credited funds", async () => {
    const f = await loadFixture();
    const open = await f.depositAndLock({ amount: 40n * USDC, feeBps: 0 });
    const released = await f.depositAndLock({ amount: 100n * USDC, feeBps: 1000, treasuryShareBps: 3000 });
    await f.tx(f.service, "confirmPayment", [released.orderId, newCep(), f.buyer.account.address]);
    // Escrow: 40 (open order) + 10 (credited fee shares); then 5 USDC arrive by plain transfer.
    await f.fund(f.stranger.account.address, 5n * USDC);
    await f.mined(f.stranger.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "transfer", args: [f.escrow, 5n * USDC] }));
    assert.equal(await f.balanceOf(f.escrow), 55n * USDC);
    assert.equal(await f.read("strayBalance", [f.usdc]), 5n * USDC);

    const to = getAddress(f.stranger.account.address);
    for (const who of [f.service, f.arbiter, f.stranger, f.wallet(0)]) {
      await expectRevert(f.send(who, "recoverTokens", [f.usdc, to, 1n]), "AccessControlUnauthorizedAccount", [who.account.address, DEFAULT_ADMIN_ROLE]);
    }
    await expectRevert(f.send(f.admin, "recoverTokens", [f.usdc, to, 5n * USDC + 1n]), "InsufficientStray", [5n * USDC]);
    await expectRevert(f.send(f.admin, "recoverTokens", [f.usdc, zeroAddress, 1n]), "ZeroAddress");
    await expectRevert(f.send(f.admin, "recoverTokens", [f.usdc, to, 0n]), "ZeroAmount");
    const receipt = await f.tx(f.admin, "recoverTokens", [f.usdc, to, 5n * USDC]);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "TokensRecovered", { token: f.usdc, to, amount: 5n * USDC });
    assert.equal(await f.balanceOf(to), 5n * USDC);
    assert.equal(await f.read("strayBalance", [f.usdc]), 0n);
    await expectRevert(f.send(f.admin, "recoverTokens", [f.usdc, to, 1n]), "InsufficientStray", [0n]);

    // Every owed unit is still there: the open order completes and the credits withdraw.
    await f.tx(f.service, "confirmPayment", [open.orderId, newCep(), f.buyer.account.address]);
    await f.tx(f.wallet(7), "withdraw", [f.usdc]);
    await f.tx(f.wallet(3), "withdraw", [f.usdc]);
    assert.equal(await f.balanceOf(f.escrow), 0n);
  });

  it("recovers any token held outside an order, a token never allow-listed included", async () => {
    const f = await loadFixture();
    const other = await f.deploy("TestUSDC", []);
    await f.mined(f.admin.writeContract({ address: other, abi: testUsdcAbi, functionName: "mint", args: [f.escrow, 123n] }));
    assert.equal(await f.read("strayBalance", [other]), 123n);
    await f.tx(f.admin, "recoverTokens", [other, f.treasury, 123n]);
    assert.equal(await f.balanceOf(f.treasury, other), 123n);
  });
});
