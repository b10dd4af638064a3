// Deployment state, admin functions, role checks and the pause policy.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, keccak256, toHex } from "viem";
import type { Hex } from "viem";
import { ARBITER_ROLE, DEFAULT_ADMIN_ROLE, SERVICE_ROLE, readArtifact } from "../../src/stack/deploy.ts";
import { disputeOutcome, escrowAbi, orderTermsTypes, refundReason, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { DAY, assertEvent, escrowEvents, expectRevert, loadFixture, newOrderId, zeroAddress } from "./fixtures.ts";

describe("OfframpEscrow deployment and admin", () => {
  it("starts with the roles, treasury, allow-listed USDC and EIP-712 domain the system expects", async () => {
    const f = await loadFixture();
    assert.equal(await f.read("hasRole", [DEFAULT_ADMIN_ROLE, f.admin.account.address]), true);
    assert.equal(await f.read("hasRole", [SERVICE_ROLE, f.service.account.address]), true);
    assert.equal(await f.read("hasRole", [ARBITER_ROLE, f.arbiter.account.address]), true);
    assert.equal(await f.read("hasRole", [SERVICE_ROLE, f.arbiter.account.address]), false);
    assert.equal(await f.read("SERVICE_ROLE", []), SERVICE_ROLE);
    assert.equal(await f.read("ARBITER_ROLE", []), ARBITER_ROLE);
    assert.equal(getAddress(await f.read("treasury", [])), f.treasury);
    assert.equal(await f.read("tokenAllowed", [f.usdc]), true);
    assert.equal(await f.read("paused", []), false);

    const [, name, version, chainId, verifyingContract] = await f.read("eip712Domain", []);
    assert.deepEqual([name, version, chainId, getAddress(verifyingContract)], ["OfframpEscrow", "1", 31337n, f.escrow]);

    const typeString = `OrderTerms(${orderTermsTypes.OrderTerms.map((p) => `${p.type} ${p.name}`).join(",")})`;
    assert.equal(
      typeString,
      "OrderTerms(bytes32 orderId,address token,uint256 amount,uint16 feeBps,address feeRecipient,uint16 treasuryShareBps,uint64 depositDeadline,uint64 listingWindow,uint64 lockWindow)",
    );
    assert.equal(await f.read("ORDER_TERMS_TYPEHASH", []), keccak256(toHex(typeString)));

    assert.equal(await f.read("MAX_FEE_BPS", []), 1000);
    assert.equal(await f.read("DISPUTE_PENALTY", []), 50n);
    // The generated constants in escrow-abi.ts match the contract's.
    assert.equal(await f.read("OUTCOME_BUYER", []), disputeOutcome.BUYER);
    assert.equal(await f.read("OUTCOME_SELLER", []), disputeOutcome.SELLER);
    assert.equal(await f.read("OUTCOME_NO_FAULT_RELEASE", []), disputeOutcome.NO_FAULT_RELEASE);
    assert.equal(await f.read("OUTCOME_NO_FAULT_REFUND", []), disputeOutcome.NO_FAULT_REFUND);
    assert.equal(await f.read("OUTCOME_NO_FAULT_RETRY", []), disputeOutcome.NO_FAULT_RETRY);
    assert.equal(await f.read("REFUND_LOCK_EXPIRED", []), refundReason.LOCK_EXPIRED);
    assert.equal(await f.read("REFUND_LISTING_EXPIRED", []), refundReason.LISTING_EXPIRED);
    assert.equal(await f.read("REFUND_CANCELLED", []), refundReason.CANCELLED);
    assert.equal(await f.read("REFUND_DISPUTE", []), refundReason.DISPUTE);

    const unknown = await f.getOrder(newOrderId());
    assert.equal(unknown.status, 0);
    assert.equal(unknown.amount, 0n);
    assert.equal(unknown.seller, zeroAddress);
  });

  it("TestUSDC has 6 decimals and anyone can mint it (sandbox faucet)", async () => {
    const f = await loadFixture();
    assert.equal(await f.publicClient.readContract({ address: f.usdc, abi: testUsdcAbi, functionName: "decimals" }), 6);
    assert.equal(await f.publicClient.readContract({ address: f.usdc, abi: testUsdcAbi, functionName: "symbol" }), "USDC");
    await f.mined(f.stranger.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "mint", args: [f.stranger.account.address, 5n] }));
    assert.equal(await f.balanceOf(f.stranger.account.address), 5n);
  });

  it("constructor rejects a zero admin or treasury and a refund grace above 30 days; the grace is immutable", async () => {
    const f = await loadFixture();
    const { bytecode } = await readArtifact("OfframpEscrow");
    await expectRevert(f.admin.deployContract({ abi: escrowAbi, bytecode, args: [zeroAddress, f.treasury, 3600n] }), "ZeroAddress");
    await expectRevert(f.admin.deployContract({ abi: escrowAbi, bytecode, args: [f.admin.account.address, zeroAddress, 3600n] }), "ZeroAddress");
    const tooLong = 30n * DAY + 1n;
    await expectRevert(f.admin.deployContract({ abi: escrowAbi, bytecode, args: [f.admin.account.address, f.treasury, tooLong] }), "InvalidRefundGrace", [tooLong]);
    const receipt = await f.mined(f.admin.deployContract({ abi: escrowAbi, bytecode, args: [f.admin.account.address, f.treasury, 30n * DAY] }));
    const grace = await f.publicClient.readContract({ address: receipt.contractAddress!, abi: escrowAbi, functionName: "REFUND_GRACE_SECONDS" });
    assert.equal(grace, 30n * DAY);
    assert.equal(await f.read("REFUND_GRACE_SECONDS", []), 3600n);
  });

  it("setTokenAllowed: admin only, emits TokenAllowed, rejects zero, gates new deposits only", async () => {
    const f = await loadFixture();
    const other = await f.deploy("TestUSDC", []);
    const receipt = await f.tx(f.admin, "setTokenAllowed", [other, true]);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "TokenAllowed", { token: other, allowed: true });
    assert.equal(await f.read("tokenAllowed", [other]), true);

    await expectRevert(f.send(f.service, "setTokenAllowed", [other, false]), "AccessControlUnauthorizedAccount", [
      f.service.account.address,
      DEFAULT_ADMIN_ROLE,
    ]);
    await expectRevert(f.send(f.admin, "setTokenAllowed", [zeroAddress, true]), "ZeroAddress");

    // An order already escrowed in a token completes after the token is disallowed.
    const terms = await f.depositAndLock({ token: other });
    await f.tx(f.admin, "setTokenAllowed", [other, false]);
    assert.equal(await f.read("tokenAllowed", [other]), false);
    await expectRevert(f.deposit({ token: other }), "TokenNotAllowed", [other]);
    await f.tx(f.service, "confirmPayment", [terms.orderId, keccak256(toHex("cep-disallowed")), f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
  });

  it("setTreasury: admin only, emits TreasuryUpdated, rejects zero, applies to later releases", async () => {
    const f = await loadFixture();
    const newTreasury = f.wallet(9).account.address;
    await expectRevert(f.send(f.service, "setTreasury", [newTreasury]), "AccessControlUnauthorizedAccount");
    await expectRevert(f.send(f.admin, "setTreasury", [zeroAddress]), "ZeroAddress");
    const receipt = await f.tx(f.admin, "setTreasury", [newTreasury]);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "TreasuryUpdated", { previousTreasury: f.treasury, newTreasury });

    const terms = await f.depositAndLock({ amount: 1_000_000n, feeBps: 1000, treasuryShareBps: 10_000 });
    await f.tx(f.service, "confirmPayment", [terms.orderId, keccak256(toHex("cep-treasury")), f.buyer.account.address]);
    assert.equal(await f.read("accrued", [getAddress(newTreasury), f.usdc]), 100_000n);
    assert.equal(await f.read("accrued", [f.treasury, f.usdc]), 0n);
  });

  it("only the admin grants roles; a revoked service key can no longer sign deposits", async () => {
    const f = await loadFixture();
    await expectRevert(f.send(f.service, "grantRole", [SERVICE_ROLE, f.stranger.account.address]), "AccessControlUnauthorizedAccount", [
      f.service.account.address,
      DEFAULT_ADMIN_ROLE,
    ]);
    await expectRevert(f.send(f.arbiter, "grantRole", [ARBITER_ROLE, f.stranger.account.address]), "AccessControlUnauthorizedAccount");
    await f.tx(f.admin, "revokeRole", [SERVICE_ROLE, f.service.account.address]);
    await expectRevert(f.deposit(), "UnauthorizedSigner", [f.service.account.address]);
    await expectRevert(f.send(f.service, "cancel", [newOrderId()]), "AccessControlUnauthorizedAccount", [
      f.service.account.address,
      SERVICE_ROLE,
    ]);
  });

  it("pause/unpause: admin only, no double pause or unpause", async () => {
    const f = await loadFixture();
    await expectRevert(f.send(f.service, "pause", []), "AccessControlUnauthorizedAccount");
    await expectRevert(f.send(f.admin, "unpause", []), "ExpectedPause");
    const receipt = await f.tx(f.admin, "pause", []);
    assert.equal(escrowEvents(receipt, f.escrow)[0]?.eventName, "Paused");
    assert.equal(await f.read("paused", []), true);
    await expectRevert(f.send(f.admin, "pause", []), "EnforcedPause");
    await expectRevert(f.send(f.arbiter, "unpause", []), "AccessControlUnauthorizedAccount");
    await f.tx(f.admin, "unpause", []);
    assert.equal(await f.read("paused", []), false);
  });

  it("while paused: no deposit, lock, confirmation, lock-expiry refund, withdrawal or releasing resolution; cancel, listing expiry and disputes still work", async () => {
    const f = await loadFixture();
    const listed = await f.deposit();
    const listedToCancel = await f.deposit();
    const locked = await f.depositAndLock();
    const lockedToDispute = await f.depositAndLock();
    const disputed: Hex[] = [];
    for (let i = 0; i < 5; i++) {
      const { orderId } = await f.depositAndLock();
      await f.tx(f.buyer, "openDispute", [orderId]);
      disputed.push(orderId);
    }
    const credited = await f.depositAndLock({ feeBps: 100, treasuryShareBps: 0 });
    await f.tx(f.service, "confirmPayment", [credited.orderId, keccak256(toHex("cep-credit")), f.buyer.account.address]);

    // Prepare a deposit (mint + approve) and a lock permit before pausing.
    const terms = await f.makeTerms();
    await f.fund(f.seller.account.address, terms.amount);
    await f.mined(f.seller.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, terms.amount] }));
    const signature = await f.sign(terms);
    const permit = await f.makePermit(listed.terms.orderId, { deadline: (await f.now()) + 10n * DAY });
    const permitSignature = await f.signPermit(permit);

    await f.tx(f.admin, "pause", []);
    await expectRevert(f.send(f.seller, "deposit", [terms, signature]), "EnforcedPause");
    await expectRevert(f.send(f.buyer, "lock", [permit, permitSignature]), "EnforcedPause");
    await expectRevert(f.send(f.service, "confirmPayment", [locked.orderId, keccak256(toHex("cep-paused")), f.buyer.account.address]), "EnforcedPause");
    await expectRevert(f.send(f.wallet(7), "withdraw", [f.usdc]), "EnforcedPause");
    const [d0, d1, d2, d3, d4] = disputed as [Hex, Hex, Hex, Hex, Hex];
    await expectRevert(f.send(f.arbiter, "resolveDispute", [d0, disputeOutcome.BUYER, f.buyer.account.address]), "EnforcedPause");
    await expectRevert(f.send(f.arbiter, "resolveDispute", [d2, disputeOutcome.NO_FAULT_RELEASE, f.buyer.account.address]), "EnforcedPause");

    // Refunds to the seller outside lock expiry, disputes and non-releasing resolutions keep working.
    await f.tx(f.service, "cancel", [listedToCancel.terms.orderId]);
    await f.tx(f.arbiter, "resolveDispute", [d1, disputeOutcome.SELLER, f.buyer.account.address]);
    await f.tx(f.arbiter, "resolveDispute", [d3, disputeOutcome.NO_FAULT_REFUND, f.buyer.account.address]);
    await f.tx(f.arbiter, "resolveDispute", [d4, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    await f.tx(f.buyer, "openDispute", [lockedToDispute.orderId]);
    await f.travel(3n * DAY);
    await f.tx(f.stranger, "expireListing", [listed.terms.orderId]);
    // Lock time is stopped: a day-long lock paused for three days is not refundable, by anyone.
    for (const who of [f.stranger, f.service]) {
      await expectRevert(f.send(who, "refundExpiredLock", [locked.orderId]), "EnforcedPause");
      await expectRevert(f.send(who, "refundExpiredLock", [d4]), "EnforcedPause");
    }
    for (const [id, status] of [
      [listed.terms.orderId, 5],
      [listedToCancel.terms.orderId, 5],
      [locked.orderId, 2],
      [lockedToDispute.orderId, 3],
      [d0, 3],
      [d1, 5],
      [d2, 3],
      [d3, 5],
      [d4, 2],
    ] as const) {
      assert.equal((await f.getOrder(id)).status, status, `status of ${id}`);
    }

    // After unpausing, the blocked releases go through, and the paused locks still have their time.
    await f.tx(f.admin, "unpause", []);
    await f.tx(f.arbiter, "resolveDispute", [d0, disputeOutcome.BUYER, f.buyer.account.address]);
    await f.tx(f.arbiter, "resolveDispute", [d2, disputeOutcome.NO_FAULT_RELEASE, f.buyer.account.address]);
    assert.equal((await f.getOrder(d0)).status, 4);
    assert.equal((await f.getOrder(d2)).status, 4);
    await expectRevert(f.send(f.service, "refundExpiredLock", [locked.orderId]), "LockNotExpired");
    await f.tx(f.service, "confirmPayment", [locked.orderId, keccak256(toHex("cep-after-pause")), f.buyer.account.address]);
    await f.tx(f.wallet(7), "withdraw", [f.usdc]);
  });
});
