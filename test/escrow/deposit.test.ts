// deposit(): signed terms, every validation, signature forgery and replay.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, hashTypedData, hexToBigInt, keccak256, numberToHex, parseSignature, serializeSignature, toHex } from "viem";
import type { Hex } from "viem";
import { orderTermsTypes, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { devAccounts } from "../../src/stack/local-node.ts";
import { DAY, USDC, assertEvent, escrowEvents, expectRevert, loadFixture, mockTokenAbi, zeroAddress } from "./fixtures.ts";
import type { Fixture, OrderTerms } from "./fixtures.ts";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** Mints and approves for the seller without depositing, so the deposit's block time can be set. */
async function prepare(f: Fixture, terms: OrderTerms, from = f.seller) {
  await f.fund(from.account.address, terms.amount, terms.token);
  await f.mined(from.writeContract({ address: terms.token, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, terms.amount] }));
}

describe("deposit", () => {
  it("escrows the amount, makes msg.sender the seller and emits Deposited", async () => {
    const f = await loadFixture();
    const sellerBefore = await f.balanceOf(f.seller.account.address);
    const { terms, receipt } = await f.deposit({ amount: 250n * USDC, feeBps: 150, treasuryShareBps: 2000, listingWindow: 3600n, lockWindow: 7200n });
    const block = await f.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const listingExpiresAt = block.timestamp + 3600n;

    assert.equal(await f.balanceOf(f.escrow), 250n * USDC);
    assert.equal(await f.balanceOf(f.seller.account.address), sellerBefore);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Deposited", {
      orderId: terms.orderId,
      seller: f.seller.account.address,
      token: f.usdc,
      amount: 250n * USDC,
      feeBps: 150,
      feeRecipient: f.partner,
      treasuryShareBps: 2000,
      listingExpiresAt,
      lockWindow: 7200n,
    });
    const order = await f.getOrder(terms.orderId);
    assert.deepEqual(
      { ...order, seller: getAddress(order.seller), feeRecipient: getAddress(order.feeRecipient), token: getAddress(order.token) },
      {
        seller: getAddress(f.seller.account.address),
        feeBps: 150,
        treasuryShareBps: 2000,
        lockWindow: 7200n,
        buyer: zeroAddress,
        lockExpiresAt: 0n,
        status: 1,
        token: f.usdc,
        listingExpiresAt,
        feeRecipient: f.partner,
        pausedTotalAtLock: 0n,
        amount: 250n * USDC,
      },
    );
  });

  it("stores a zero fee recipient (the fee goes back to the seller)", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit({ feeRecipient: zeroAddress, feeBps: 500 });
    assert.equal((await f.getOrder(terms.orderId)).feeRecipient, zeroAddress);
  });

  it("hashTerms returns the EIP-712 digest that off-chain signers compute", async () => {
    const f = await loadFixture();
    const terms = await f.makeTerms();
    const digest = hashTypedData({ domain: f.domain, types: orderTermsTypes, primaryType: "OrderTerms", message: terms });
    assert.equal(await f.read("hashTerms", [terms]), digest);
    assert.equal(
      await f.read("domainSeparator", []),
      keccak256(
        `0x${[
          keccak256(toHex("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
          keccak256(toHex("OfframpEscrow")),
          keccak256(toHex("1")),
          numberToHex(31337, { size: 32 }),
          numberToHex(hexToBigInt(f.escrow), { size: 32 }),
        ]
          .map((word) => word.slice(2))
          .join("")}`,
      ),
    );
  });

  it("accepts a deposit in the block at the deadline and rejects one a second later", async () => {
    const f = await loadFixture();
    const onTime = await f.makeTerms();
    await prepare(f, onTime);
    onTime.depositDeadline = (await f.now()) + 100n;
    await f.advance(100n);
    await f.tx(f.seller, "deposit", [onTime, await f.sign(onTime)]);

    const late = await f.makeTerms();
    await prepare(f, late);
    late.depositDeadline = (await f.now()) + 100n;
    await f.advance(101n);
    await expectRevert(f.send(f.seller, "deposit", [late, await f.sign(late)]), "DepositDeadlinePassed", [late.depositDeadline]);
  });

  it("uses an order id once: the same signature cannot be replayed, by anyone, even after a refund", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    const signature = await f.sign(terms);
    await prepare(f, terms);
    await expectRevert(f.send(f.seller, "deposit", [terms, signature]), "OrderAlreadyExists", [terms.orderId]);
    await prepare(f, terms, f.stranger);
    await expectRevert(f.send(f.stranger, "deposit", [terms, signature]), "OrderAlreadyExists", [terms.orderId]);
    await f.tx(f.service, "cancel", [terms.orderId]);
    await expectRevert(f.send(f.seller, "deposit", [terms, signature]), "OrderAlreadyExists", [terms.orderId]);
    // A freshly signed second order with the same id is refused too.
    const again = { ...terms, amount: terms.amount + 1n };
    await expectRevert(f.send(f.seller, "deposit", [again, await f.sign(again)]), "OrderAlreadyExists", [terms.orderId]);
  });

  it("rejects tokens that are not allow-listed", async () => {
    const f = await loadFixture();
    const other = await f.deploy("TestUSDC", []);
    await expectRevert(f.deposit({ token: other }), "TokenNotAllowed", [other]);
  });

  it("rejects a zero amount", async () => {
    const f = await loadFixture();
    await expectRevert(f.deposit({ amount: 0n }), "ZeroAmount");
  });

  it("accepts a fee up to 1000 bps (10 %) and a treasury share up to 10000 bps, rejects more", async () => {
    const f = await loadFixture();
    await f.deposit({ feeBps: 1000, treasuryShareBps: 10_000 });
    await expectRevert(f.deposit({ feeBps: 1001 }), "FeeTooHigh", [1001]);
    await expectRevert(f.deposit({ feeBps: 65_535 }), "FeeTooHigh", [65_535]);
    await expectRevert(f.deposit({ treasuryShareBps: 10_001 }), "TreasuryShareTooHigh", [10_001]);
  });

  it("rejects zero or over-a-year listing and lock windows", async () => {
    const f = await loadFixture();
    const year = 365n * DAY;
    await f.deposit({ listingWindow: year, lockWindow: year });
    await expectRevert(f.deposit({ listingWindow: 0n }), "InvalidWindow", [0n, DAY]);
    await expectRevert(f.deposit({ lockWindow: 0n }), "InvalidWindow", [DAY, 0n]);
    await expectRevert(f.deposit({ listingWindow: year + 1n }), "InvalidWindow", [year + 1n, DAY]);
    await expectRevert(f.deposit({ lockWindow: 2n ** 64n - 1n }), "InvalidWindow", [DAY, 2n ** 64n - 1n]);
  });

  it("rejects malformed and malleable (high-s) signatures", async () => {
    const f = await loadFixture();
    const terms = await f.makeTerms();
    await prepare(f, terms);
    await expectRevert(f.send(f.seller, "deposit", [terms, "0x"]), "InvalidSignature");
    await expectRevert(f.send(f.seller, "deposit", [terms, "0x1234"]), "InvalidSignature");
    const valid = await f.sign(terms);
    await expectRevert(f.send(f.seller, "deposit", [terms, `0x${"00".repeat(65)}`]), "InvalidSignature");
    const { r, s, yParity } = parseSignature(valid);
    const highS = serializeSignature({ r, s: numberToHex(SECP256K1_N - hexToBigInt(s), { size: 32 }), yParity: yParity === 0 ? 1 : 0 });
    await expectRevert(f.send(f.seller, "deposit", [terms, highS]), "InvalidSignature");
    await f.tx(f.seller, "deposit", [terms, valid]);
  });

  it("rejects terms signed by a key without SERVICE_ROLE (admin, arbiter, the seller)", async () => {
    const f = await loadFixture();
    for (const index of [0, 2, 4]) {
      const account = devAccounts[index];
      assert.ok(account);
      const terms = await f.makeTerms();
      await prepare(f, terms);
      await expectRevert(f.send(f.seller, "deposit", [terms, await f.sign(terms, account.privateKey)]), "UnauthorizedSigner", [
        account.address,
      ]);
    }
  });

  it("rejects any altered field of signed terms", async () => {
    const f = await loadFixture();
    const otherToken = await f.deploy("TestUSDC", []);
    await f.tx(f.admin, "setTokenAllowed", [otherToken, true]);
    const terms = await f.makeTerms();
    const signature = await f.sign(terms);
    const alterations: Partial<OrderTerms>[] = [
      { orderId: keccak256(toHex("another id")) },
      { token: otherToken },
      { amount: terms.amount - 1n },
      { feeBps: terms.feeBps - 1 },
      { feeRecipient: zeroAddress },
      { feeRecipient: getAddress(f.seller.account.address) },
      { treasuryShareBps: 0 },
      { depositDeadline: terms.depositDeadline + 1n },
      { listingWindow: terms.listingWindow * 2n },
      { lockWindow: terms.lockWindow * 2n },
    ];
    for (const alteration of alterations) {
      const altered = { ...terms, ...alteration };
      await prepare(f, altered);
      // The signature recovers to some unrelated address, which has no SERVICE_ROLE.
      await expectRevert(f.send(f.seller, "deposit", [altered, signature]), "UnauthorizedSigner");
    }
    await prepare(f, terms);
    await f.tx(f.seller, "deposit", [terms, signature]);
  });

  it("rejects signatures made for another contract or chain (domain separation)", async () => {
    const f = await loadFixture();
    const terms = await f.makeTerms();
    await prepare(f, terms);
    const otherContract = await f.sign(terms, undefined, { ...f.domain, verifyingContract: f.usdc });
    await expectRevert(f.send(f.seller, "deposit", [terms, otherContract]), "UnauthorizedSigner");
    const otherChain = await f.sign(terms, undefined, { ...f.domain, chainId: 8453 });
    await expectRevert(f.send(f.seller, "deposit", [terms, otherChain]), "UnauthorizedSigner");
    const otherVersion = await f.sign(terms, undefined, { ...f.domain, version: "2" as "1" });
    await expectRevert(f.send(f.seller, "deposit", [terms, otherVersion]), "UnauthorizedSigner");
  });

  it("needs the token allowance and balance (SafeERC20 bubbles the token's error)", async () => {
    const f = await loadFixture();
    const terms = await f.makeTerms();
    await f.fund(f.seller.account.address, terms.amount);
    const signature = await f.sign(terms);
    await expectRevert(f.send(f.seller, "deposit", [terms, signature]), "ERC20InsufficientAllowance", [f.escrow, 0n, terms.amount]);
    await f.mined(f.stranger.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, terms.amount] }));
    await expectRevert(f.send(f.stranger, "deposit", [terms, signature]), "ERC20InsufficientBalance");
  });

  it("refuses a token that delivers less than the amount (fee-on-transfer)", async () => {
    const f = await loadFixture();
    const { viem } = f;
    const fot = (await viem.deployContract("FeeOnTransferToken")).address;
    await f.tx(f.admin, "setTokenAllowed", [fot, true]);
    const terms = await f.makeTerms({ token: fot, amount: 1000n });
    await f.mined(f.seller.writeContract({ address: fot, abi: mockTokenAbi, functionName: "mint", args: [f.seller.account.address, 1000n] }));
    await f.mined(f.seller.writeContract({ address: fot, abi: mockTokenAbi, functionName: "approve", args: [f.escrow, 1000n] }));
    await expectRevert(f.send(f.seller, "deposit", [terms, await f.sign(terms)]), "TransferAmountMismatch", [1000n, 990n]);
  });

  it("cannot be called while paused", async () => {
    const f = await loadFixture();
    const terms = await f.makeTerms();
    await prepare(f, terms);
    await f.tx(f.admin, "pause", []);
    await expectRevert(f.send(f.seller, "deposit", [terms, await f.sign(terms)]), "EnforcedPause");
  });

  it("keeps each order separate: many sellers, many orders, one balance", async () => {
    const f = await loadFixture();
    const amounts = [1n, 7n * USDC, 1_000_000n * USDC];
    const ids: Hex[] = [];
    for (const [i, amount] of amounts.entries()) {
      const { terms } = await f.deposit({ amount }, f.wallet(4 + i));
      ids.push(terms.orderId);
    }
    assert.equal(await f.balanceOf(f.escrow), amounts.reduce((a, b) => a + b, 0n));
    for (const [i, id] of ids.entries()) {
      const order = await f.getOrder(id);
      assert.equal(order.amount, amounts[i]);
      assert.equal(getAddress(order.seller), getAddress(f.wallet(4 + i).account.address));
    }
  });
});
