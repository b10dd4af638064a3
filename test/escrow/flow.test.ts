// lock, confirmPayment (fee split), refundExpiredLock, expireListing, cancel.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, hashTypedData, keccak256, recoverTypedDataAddress, toHex } from "viem";
import type { Address, Hex } from "viem";
import { SERVICE_ROLE } from "../../src/stack/deploy.ts";
import { disputeOutcome, lockPermitTypes } from "../../src/chain/escrow-abi.ts";
import { devAccounts } from "../../src/stack/local-node.ts";
import { DAY, GRACE, USDC, assertEvent, escrowEvents, expectRevert, loadFixture, newOrderId, zeroAddress } from "./fixtures.ts";
import type { Fixture } from "./fixtures.ts";

let cepCounter = 0;
const newCep = (): Hex => keccak256(toHex(`cep-${++cepCounter}`));

async function balances(f: Fixture, accounts: Address[]): Promise<bigint[]> {
  return Promise.all(accounts.map((account) => f.balanceOf(account)));
}

describe("lock", () => {
  it("lets any buyer but the seller take an Active order and starts the lock window", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit({ lockWindow: 5000n });
    const receipt = await f.mined(f.lock(f.buyer, terms.orderId));
    const { timestamp } = await f.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Locked", {
      orderId: terms.orderId,
      buyer: f.buyer.account.address,
      lockExpiresAt: timestamp + 5000n,
    });
    const order = await f.getOrder(terms.orderId);
    assert.equal(order.status, 2);
    assert.equal(getAddress(order.buyer), getAddress(f.buyer.account.address));
    assert.equal(order.lockExpiresAt, timestamp + 5000n);
  });

  it("refuses the seller, a second buyer, unknown orders, and paused contracts", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    await expectRevert(f.lock(f.seller, terms.orderId), "SellerCannotLock");
    await f.mined(f.lock(f.buyer, terms.orderId));
    await expectRevert(f.lock(f.stranger, terms.orderId), "InvalidStatus", [terms.orderId, 2]);
    const unknown = newOrderId();
    await expectRevert(f.lock(f.buyer, unknown), "InvalidStatus", [unknown, 0]);
    const other = await f.deposit();
    await f.tx(f.admin, "pause", []);
    await expectRevert(f.lock(f.buyer, other.terms.orderId), "EnforcedPause");
  });

  it("works until one second before the listing expires, not at expiry", async () => {
    const f = await loadFixture();
    const a = await f.deposit({ listingWindow: 1000n });
    const b = await f.deposit({ listingWindow: 1000n });
    const aExpiry = (await f.getOrder(a.terms.orderId)).listingExpiresAt;
    const bExpiry = (await f.getOrder(b.terms.orderId)).listingExpiresAt;
    await f.testClient.setNextBlockTimestamp({ timestamp: aExpiry - 1n });
    await f.mined(f.lock(f.buyer, a.terms.orderId, aExpiry));
    await f.testClient.setNextBlockTimestamp({ timestamp: bExpiry });
    await expectRevert(f.lock(f.buyer, b.terms.orderId, bExpiry + 120n), "ListingExpired", [bExpiry]);
  });
});

describe("lock permits (decisions 17)", () => {
  it("lock takes the service's EIP-712 LockPermit, whose digest hashLockPermit returns", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    const permit = await f.makePermit(terms.orderId);
    const digest = hashTypedData({ domain: f.domain, types: lockPermitTypes, primaryType: "LockPermit", message: permit });
    assert.equal(await f.read("hashLockPermit", [permit]), digest);
    assert.equal(await f.read("LOCK_PERMIT_TYPEHASH", []), keccak256(toHex("LockPermit(bytes32 orderId,address buyer,uint64 deadline)")));
    assert.equal(
      `LockPermit(${lockPermitTypes.LockPermit.map((p) => `${p.type} ${p.name}`).join(",")})`,
      "LockPermit(bytes32 orderId,address buyer,uint64 deadline)",
    );
    await f.tx(f.buyer, "lock", [permit, await f.signPermit(permit)]);
    assert.equal((await f.getOrder(terms.orderId)).status, 2);
  });

  it("refuses forged permits: signed by no SERVICE_ROLE key, altered after signing, or not a signature", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    const permit = await f.makePermit(terms.orderId);
    for (const index of [2, 10, 5, 6]) {
      // arbiter, admin, the buyer itself, a stranger
      const signature = await f.signPermit(permit, devAccounts[index]!.privateKey);
      await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "UnauthorizedSigner", [devAccounts[index]!.address]);
    }
    // Altered after the service signed: a later deadline, another order.
    const signature = await f.signPermit(permit);
    const longer = { ...permit, deadline: permit.deadline + 3600n };
    const other = await f.deposit();
    const elsewhere = { ...permit, orderId: other.terms.orderId };
    for (const altered of [longer, elsewhere]) {
      const recovered = await recoverTypedDataAddress({ domain: f.domain, types: lockPermitTypes, primaryType: "LockPermit", message: altered, signature });
      await expectRevert(f.send(f.buyer, "lock", [altered, signature]), "UnauthorizedSigner", [recovered]);
    }
    // Signed by the service for another escrow or another chain.
    for (const signDomain of [{ ...f.domain, verifyingContract: f.usdc }, { ...f.domain, chainId: 1 }]) {
      const foreign = await f.signPermit(permit, devAccounts[1].privateKey, signDomain);
      await expectRevert(f.send(f.buyer, "lock", [permit, foreign]), "UnauthorizedSigner");
    }
    await expectRevert(f.send(f.buyer, "lock", [permit, "0x1234"]), "InvalidSignature");
    await expectRevert(f.send(f.buyer, "lock", [permit, `0x${"00".repeat(65)}`]), "InvalidSignature");
    assert.equal((await f.getOrder(terms.orderId)).status, 1);
    await f.tx(f.buyer, "lock", [permit, signature]);
  });

  it("refuses a permit signed by a service key that has since been revoked", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    const permit = await f.makePermit(terms.orderId);
    const signature = await f.signPermit(permit);
    await f.tx(f.admin, "revokeRole", [SERVICE_ROLE, f.service.account.address]);
    await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "UnauthorizedSigner", [f.service.account.address]);
  });

  it("accepts a permit up to its deadline second included, not a second later", async () => {
    const f = await loadFixture();
    const a = await f.deposit();
    const b = await f.deposit();
    const deadline = (await f.now()) + 120n;
    const permitA = await f.makePermit(a.terms.orderId, { deadline });
    const permitB = await f.makePermit(b.terms.orderId, { deadline });
    await f.testClient.setNextBlockTimestamp({ timestamp: deadline });
    await f.tx(f.buyer, "lock", [permitA, await f.signPermit(permitA)]);
    await f.testClient.setNextBlockTimestamp({ timestamp: deadline + 1n });
    await expectRevert(f.send(f.buyer, "lock", [permitB, await f.signPermit(permitB)]), "PermitExpired", [deadline]);
  });

  it("is valid only for the wallet it names: another wallet cannot use it", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    const permit = await f.makePermit(terms.orderId);
    const signature = await f.signPermit(permit);
    for (const who of [f.stranger, f.seller, f.service, f.admin]) {
      await expectRevert(f.send(who, "lock", [permit, signature]), "PermitNotForCaller", [permit.buyer]);
    }
    // A permit the service signed for the seller's own wallet is still refused.
    const sellers = await f.makePermit(terms.orderId, { buyer: getAddress(f.seller.account.address) });
    await expectRevert(f.send(f.seller, "lock", [sellers, await f.signPermit(sellers)]), "SellerCannotLock");
    await f.tx(f.buyer, "lock", [permit, signature]);
  });

  it("cannot be replayed: not after the lock, a no-fault retry, a refund or a release, nor by a second permit", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit({ lockWindow: 600n });
    const permit = await f.makePermit(terms.orderId, { deadline: (await f.now()) + DAY });
    const signature = await f.signPermit(permit);
    await f.tx(f.buyer, "lock", [permit, signature]);
    await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "InvalidStatus", [terms.orderId, 2]);
    // Another permit the service issued for the same order, to another buyer, is dead too.
    const rival = await f.makePermit(terms.orderId, { buyer: getAddress(f.stranger.account.address), deadline: (await f.now()) + DAY });
    await expectRevert(f.send(f.stranger, "lock", [rival, await f.signPermit(rival)]), "InvalidStatus", [terms.orderId, 2]);
    // A retry puts the order back to Locked, never Active: the permit stays spent.
    await f.tx(f.buyer, "openDispute", [terms.orderId]);
    await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "InvalidStatus", [terms.orderId, 3]);
    await f.tx(f.arbiter, "resolveDispute", [terms.orderId, disputeOutcome.NO_FAULT_RETRY, f.buyer.account.address]);
    await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "InvalidStatus", [terms.orderId, 2]);
    await f.travel(600n);
    await f.tx(f.service, "refundExpiredLock", [terms.orderId]);
    await expectRevert(f.send(f.buyer, "lock", [permit, signature]), "InvalidStatus", [terms.orderId, 5]);

    const released = await f.deposit();
    const permit2 = await f.makePermit(released.terms.orderId, { deadline: (await f.now()) + DAY });
    const signature2 = await f.signPermit(permit2);
    await f.tx(f.buyer, "lock", [permit2, signature2]);
    await f.tx(f.service, "confirmPayment", [released.terms.orderId, newCep(), f.buyer.account.address]);
    await expectRevert(f.send(f.buyer, "lock", [permit2, signature2]), "InvalidStatus", [released.terms.orderId, 4]);
  });
});

/** What each account may withdraw of the fixture's USDC. */
async function credits(f: Fixture, accounts: Address[]): Promise<bigint[]> {
  return Promise.all(accounts.map((account) => f.read("accrued", [account, f.usdc])));
}

describe("confirmPayment", () => {
  it("pays the buyer at once and credits partner and treasury in one transaction; the CEP is used", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ amount: 1000n * USDC, feeBps: 250, treasuryShareBps: 3000 });
    const cep = newCep();
    const before = await balances(f, [f.buyer.account.address, f.partner, f.treasury, f.escrow]);
    const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, cep, f.buyer.account.address]);
    const after = await balances(f, [f.buyer.account.address, f.partner, f.treasury, f.escrow]);
    // fee = 25 USDC; treasury 30 % of it = 7.5 USDC; partner 17.5 USDC; buyer 975 USDC. Only the buyer
    // is paid now; the fee shares stay in the escrow, credited to their owners.
    assert.deepEqual(
      after.map((value, i) => value - (before[i] ?? 0n)),
      [975n * USDC, 0n, 0n, -975n * USDC],
    );
    assert.deepEqual(await credits(f, [f.partner, f.treasury]), [17_500_000n, 7_500_000n]);
    assert.equal(await f.read("totalAccrued", [f.usdc]), 25n * USDC);
    assert.equal(await f.read("totalEscrowed", [f.usdc]), 0n);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Released", {
      orderId: terms.orderId,
      buyer: f.buyer.account.address,
      buyerAmount: 975n * USDC,
      feeRecipient: f.partner,
      feeAmount: 17_500_000n,
      treasury: f.treasury,
      treasuryAmount: 7_500_000n,
      cepHash: cep,
    });
    assert.equal(await f.read("cepHashUsed", [cep]), true);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]), "InvalidStatus", [terms.orderId, 4]);
  });

  it("is for SERVICE_ROLE only, while Locked, with a non-zero CEP hash never used before", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock();
    for (const who of [f.buyer, f.seller, f.arbiter, f.admin]) {
      await expectRevert(f.send(who, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]), "AccessControlUnauthorizedAccount", [
        who.account.address,
        SERVICE_ROLE,
      ]);
    }
    const active = await f.deposit();
    await expectRevert(f.send(f.service, "confirmPayment", [active.terms.orderId, newCep(), f.buyer.account.address]), "InvalidStatus", [active.terms.orderId, 1]);
    const unknown = newOrderId();
    await expectRevert(f.send(f.service, "confirmPayment", [unknown, newCep(), f.buyer.account.address]), "InvalidStatus", [unknown, 0]);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, `0x${"00".repeat(32)}`, f.buyer.account.address]), "InvalidCepHash");

    const cep = newCep();
    await f.tx(f.service, "confirmPayment", [terms.orderId, cep, f.buyer.account.address]);
    const second = await f.depositAndLock();
    await expectRevert(f.send(f.service, "confirmPayment", [second.orderId, cep, f.buyer.account.address]), "CepHashAlreadyUsed", [cep]);
    await f.tx(f.service, "confirmPayment", [second.orderId, newCep(), f.buyer.account.address]);
  });

  it("pays only the buyer it names: a release naming anyone but the lock holder reverts (NotLockHolder) and moves nothing", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock();
    const other = f.stranger.account.address;
    const before = await balances(f, [f.buyer.account.address, other, f.escrow]);
    for (const named of [other, f.seller.account.address, zeroAddress]) {
      await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep(), named]), "NotLockHolder", [named, f.buyer.account.address]);
    }
    assert.deepEqual(await balances(f, [f.buyer.account.address, other, f.escrow]), before);
    assert.equal((await f.getOrder(terms.orderId)).status, 2);
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
  });

  it("verified payment beats the clock: works after the lock expired until expiry + REFUND_GRACE_SECONDS, exclusive", async () => {
    const f = await loadFixture();
    assert.equal(await f.read("REFUND_GRACE_SECONDS", []), GRACE);
    const late = await f.depositAndLock({ lockWindow: 600n });
    const tooLate = await f.depositAndLock({ lockWindow: 600n });
    const lateExpiry = await f.read("lockExpiryOf", [late.orderId]);
    const tooLateExpiry = await f.read("lockExpiryOf", [tooLate.orderId]);
    await f.testClient.setNextBlockTimestamp({ timestamp: lateExpiry + GRACE - 1n });
    await f.tx(f.service, "confirmPayment", [late.orderId, newCep(), f.buyer.account.address]);
    assert.equal((await f.getOrder(late.orderId)).status, 4);
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [late.orderId]), "InvalidStatus", [late.orderId, 4]);

    await f.testClient.setNextBlockTimestamp({ timestamp: tooLateExpiry + GRACE });
    await expectRevert(f.send(f.service, "confirmPayment", [tooLate.orderId, newCep(), f.buyer.account.address]), "PaymentWindowClosed", [tooLateExpiry + GRACE]);
    // Too late to confirm: the order can now be refunded by anyone, or disputed by a party.
    await f.tx(f.buyer, "openDispute", [tooLate.orderId]);
  });

  describe("fee split (fee = amount*feeBps/1e4, treasury = fee*share/1e4, both rounded down)", () => {
    const cases: { name: string; amount: bigint; feeBps: number; share: number; user?: boolean; buyer: bigint; fee: bigint; treasury: bigint }[] = [
      { name: "no fee", amount: 100n * USDC, feeBps: 0, share: 3000, buyer: 100n * USDC, fee: 0n, treasury: 0n },
      { name: "10 % fee, 30 % share", amount: 100n * USDC, feeBps: 1000, share: 3000, buyer: 90n * USDC, fee: 7n * USDC, treasury: 3n * USDC },
      { name: "10 % fee, 20 % share (Growth)", amount: 1234_567891n, feeBps: 1000, share: 2000, buyer: 1111_111102n, fee: 98_765432n, treasury: 24_691357n },
      { name: "1-unit amount, 10 % fee", amount: 1n, feeBps: 1000, share: 3000, buyer: 1n, fee: 0n, treasury: 0n },
      { name: "10-unit amount, 10 % fee, 30 % share", amount: 10n, feeBps: 1000, share: 3000, buyer: 9n, fee: 1n, treasury: 0n },
      { name: "treasury share 0", amount: 50n * USDC, feeBps: 200, share: 0, buyer: 49n * USDC, fee: 1n * USDC, treasury: 0n },
      { name: "treasury share 100 %", amount: 50n * USDC, feeBps: 200, share: 10_000, buyer: 49n * USDC, fee: 0n, treasury: 1n * USDC },
      { name: "odd amounts round down", amount: 999_999n, feeBps: 123, share: 3333, buyer: 987_700n, fee: 8_200n, treasury: 4_099n },
      { name: "fee to USER = seller, 30 % share", amount: 100n * USDC, feeBps: 500, share: 3000, user: true, buyer: 95n * USDC, fee: 3_500_000n, treasury: 1_500_000n },
      { name: "fee to USER, no share", amount: 100n * USDC, feeBps: 1000, share: 0, user: true, buyer: 90n * USDC, fee: 10n * USDC, treasury: 0n },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const f = await loadFixture();
        const feeRecipient = c.user === true ? zeroAddress : f.partner;
        const terms = await f.depositAndLock({ amount: c.amount, feeBps: c.feeBps, treasuryShareBps: c.share, feeRecipient });
        const payee = c.user === true ? getAddress(f.seller.account.address) : f.partner;
        const accounts = [f.buyer.account.address, payee, f.treasury, f.escrow];
        const before = await balances(f, accounts);
        const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]);
        const after = await balances(f, accounts);
        assert.deepEqual(after.map((value, i) => value - (before[i] ?? 0n)), [c.buyer, 0n, 0n, -c.buyer]);
        assert.deepEqual(await credits(f, [payee, f.treasury]), [c.fee, c.treasury]);
        assert.equal(await f.read("totalAccrued", [f.usdc]), c.fee + c.treasury);
        assert.equal(c.buyer + c.fee + c.treasury, c.amount);
        const event = escrowEvents(receipt, f.escrow)[0];
        assert.equal(event?.eventName, "Released");
        assert.ok(event?.eventName === "Released");
        assert.deepEqual(
          [event.args.buyerAmount, getAddress(event.args.feeRecipient), event.args.feeAmount, event.args.treasuryAmount],
          [c.buyer, payee, c.fee, c.treasury],
        );
        // One token transfer at most: the buyer's (none for a zero amount).
        const transfers = receipt.logs.filter((log) => getAddress(log.address) === f.usdc).length;
        assert.equal(transfers, c.buyer > 0n ? 1 : 0);
      });
    }
  });
});

describe("refundExpiredLock (decisions 19: the service alone during the grace period, then anyone)", () => {
  it("refuses everyone before the lock's expiry, the service included", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 900n });
    const expiry = await f.read("lockExpiryOf", [terms.orderId]);
    assert.equal(expiry, (await f.getOrder(terms.orderId)).lockExpiresAt);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry - 1n });
    await expectRevert(f.send(f.service, "refundExpiredLock", [terms.orderId]), "LockNotExpired", [expiry]);
    await expectRevert(f.send(f.seller, "refundExpiredLock", [terms.orderId]), "LockNotExpired", [expiry]);
  });

  it("from the expiry the service may refund; others get RefundGracePeriod", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 900n, amount: 42n * USDC });
    const expiry = await f.read("lockExpiryOf", [terms.orderId]);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry });
    for (const who of [f.stranger, f.seller, f.buyer, f.arbiter, f.admin]) {
      await expectRevert(f.send(who, "refundExpiredLock", [terms.orderId]), "RefundGracePeriod", [expiry + GRACE]);
    }
    const before = await f.balanceOf(f.seller.account.address);
    const receipt = await f.tx(f.service, "refundExpiredLock", [terms.orderId]);
    assert.equal((await f.balanceOf(f.seller.account.address)) - before, 42n * USDC);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Refunded", {
      orderId: terms.orderId,
      seller: f.seller.account.address,
      amount: 42n * USDC,
      reason: 0,
    });
    assert.equal((await f.getOrder(terms.orderId)).status, 5);
    assert.equal(await f.read("lockExpiryOf", [terms.orderId]), 0n);
    await expectRevert(f.send(f.service, "refundExpiredLock", [terms.orderId]), "InvalidStatus", [terms.orderId, 5]);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep(), f.buyer.account.address]), "InvalidStatus", [terms.orderId, 5]);
  });

  it("anyone may refund from expiry + REFUND_GRACE_SECONDS, not a second before", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 900n, amount: 42n * USDC });
    const expiry = await f.read("lockExpiryOf", [terms.orderId]);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry + GRACE - 1n });
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "RefundGracePeriod", [expiry + GRACE]);
    await f.testClient.setNextBlockTimestamp({ timestamp: expiry + GRACE });
    const before = await f.balanceOf(f.seller.account.address);
    await f.tx(f.stranger, "refundExpiredLock", [terms.orderId]);
    assert.equal((await f.balanceOf(f.seller.account.address)) - before, 42n * USDC);
  });

  it("only applies to Locked orders", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    await f.travel(2n * DAY);
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "InvalidStatus", [terms.orderId, 1]);
  });
});

describe("expireListing", () => {
  it("lets anyone refund an unlocked listing at expiry, not before", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit({ listingWindow: 300n, amount: 5n * USDC });
    const { listingExpiresAt } = await f.getOrder(terms.orderId);
    await f.testClient.setNextBlockTimestamp({ timestamp: listingExpiresAt - 1n });
    await expectRevert(f.send(f.buyer, "expireListing", [terms.orderId]), "ListingNotExpired", [listingExpiresAt]);
    await f.testClient.setNextBlockTimestamp({ timestamp: listingExpiresAt });
    const before = await f.balanceOf(f.seller.account.address);
    const receipt = await f.tx(f.buyer, "expireListing", [terms.orderId]);
    assert.equal((await f.balanceOf(f.seller.account.address)) - before, 5n * USDC);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Refunded", {
      orderId: terms.orderId,
      seller: f.seller.account.address,
      amount: 5n * USDC,
      reason: 1,
    });
    await expectRevert(f.lock(f.buyer, terms.orderId), "InvalidStatus", [terms.orderId, 5]);
  });

  it("does not apply to a locked order", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ listingWindow: 300n });
    await f.travel(301n);
    await expectRevert(f.send(f.stranger, "expireListing", [terms.orderId]), "InvalidStatus", [terms.orderId, 2]);
  });
});

describe("cancel", () => {
  it("lets the service refund an Active order at any time", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit({ amount: 77n });
    const before = await f.balanceOf(f.seller.account.address);
    const receipt = await f.tx(f.service, "cancel", [terms.orderId]);
    assert.equal((await f.balanceOf(f.seller.account.address)) - before, 77n);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Refunded", {
      orderId: terms.orderId,
      seller: f.seller.account.address,
      amount: 77n,
      reason: 2,
    });
  });

  it("is SERVICE_ROLE only and not for locked or finished orders", async () => {
    const f = await loadFixture();
    const { terms } = await f.deposit();
    for (const who of [f.seller, f.buyer, f.admin, f.arbiter]) {
      await expectRevert(f.send(who, "cancel", [terms.orderId]), "AccessControlUnauthorizedAccount", [who.account.address, SERVICE_ROLE]);
    }
    await f.mined(f.lock(f.buyer, terms.orderId));
    await expectRevert(f.send(f.service, "cancel", [terms.orderId]), "InvalidStatus", [terms.orderId, 2]);
    const other = await f.deposit();
    await f.tx(f.service, "cancel", [other.terms.orderId]);
    await expectRevert(f.send(f.service, "cancel", [other.terms.orderId]), "InvalidStatus", [other.terms.orderId, 5]);
  });
});
