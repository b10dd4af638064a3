// lock, confirmPayment (fee split), refundExpiredLock, expireListing, cancel.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getAddress, keccak256, toHex } from "viem";
import type { Address, Hex } from "viem";
import { SERVICE_ROLE } from "../../src/chain/deploy.ts";
import { DAY, USDC, assertEvent, escrowEvents, expectRevert, loadFixture, newOrderId, zeroAddress } from "./fixtures.ts";
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
    const receipt = await f.tx(f.buyer, "lock", [terms.orderId]);
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
    await expectRevert(f.send(f.seller, "lock", [terms.orderId]), "SellerCannotLock");
    await f.tx(f.buyer, "lock", [terms.orderId]);
    await expectRevert(f.send(f.stranger, "lock", [terms.orderId]), "InvalidStatus", [terms.orderId, 2]);
    const unknown = newOrderId();
    await expectRevert(f.send(f.buyer, "lock", [unknown]), "InvalidStatus", [unknown, 0]);
    const other = await f.deposit();
    await f.tx(f.admin, "pause", []);
    await expectRevert(f.send(f.buyer, "lock", [other.terms.orderId]), "EnforcedPause");
  });

  it("works until one second before the listing expires, not at expiry", async () => {
    const f = await loadFixture();
    const a = await f.deposit({ listingWindow: 1000n });
    const b = await f.deposit({ listingWindow: 1000n });
    const aExpiry = (await f.getOrder(a.terms.orderId)).listingExpiresAt;
    const bExpiry = (await f.getOrder(b.terms.orderId)).listingExpiresAt;
    await f.testClient.setNextBlockTimestamp({ timestamp: aExpiry - 1n });
    await f.tx(f.buyer, "lock", [a.terms.orderId]);
    await f.testClient.setNextBlockTimestamp({ timestamp: bExpiry });
    await expectRevert(f.send(f.buyer, "lock", [b.terms.orderId]), "ListingExpired", [bExpiry]);
  });
});

describe("confirmPayment", () => {
  it("pays buyer, partner and treasury in one transaction and marks the CEP used", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ amount: 1000n * USDC, feeBps: 250, treasuryShareBps: 3000 });
    const cep = newCep();
    const before = await balances(f, [f.buyer.account.address, f.partner, f.treasury, f.escrow]);
    const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, cep]);
    const after = await balances(f, [f.buyer.account.address, f.partner, f.treasury, f.escrow]);
    // fee = 25 USDC; treasury 30 % of it = 7.5 USDC; partner 17.5 USDC; buyer 975 USDC.
    assert.deepEqual(
      after.map((value, i) => value - (before[i] ?? 0n)),
      [975n * USDC, 17_500_000n, 7_500_000n, -1000n * USDC],
    );
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
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep()]), "InvalidStatus", [terms.orderId, 4]);
  });

  it("is for SERVICE_ROLE only, while Locked, with a non-zero CEP hash never used before", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock();
    for (const who of [f.buyer, f.seller, f.arbiter, f.admin]) {
      await expectRevert(f.send(who, "confirmPayment", [terms.orderId, newCep()]), "AccessControlUnauthorizedAccount", [
        who.account.address,
        SERVICE_ROLE,
      ]);
    }
    const active = await f.deposit();
    await expectRevert(f.send(f.service, "confirmPayment", [active.terms.orderId, newCep()]), "InvalidStatus", [active.terms.orderId, 1]);
    const unknown = newOrderId();
    await expectRevert(f.send(f.service, "confirmPayment", [unknown, newCep()]), "InvalidStatus", [unknown, 0]);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, `0x${"00".repeat(32)}`]), "InvalidCepHash");

    const cep = newCep();
    await f.tx(f.service, "confirmPayment", [terms.orderId, cep]);
    const second = await f.depositAndLock();
    await expectRevert(f.send(f.service, "confirmPayment", [second.orderId, cep]), "CepHashAlreadyUsed", [cep]);
    await f.tx(f.service, "confirmPayment", [second.orderId, newCep()]);
  });

  it("still works after the lock window while nobody has refunded (payment made in time, confirmed late)", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 600n });
    await f.travel(601n);
    await f.tx(f.service, "confirmPayment", [terms.orderId, newCep()]);
    assert.equal((await f.getOrder(terms.orderId)).status, 4);
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "InvalidStatus", [terms.orderId, 4]);
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
        const receipt = await f.tx(f.service, "confirmPayment", [terms.orderId, newCep()]);
        const after = await balances(f, accounts);
        assert.deepEqual(after.map((value, i) => value - (before[i] ?? 0n)), [c.buyer, c.fee, c.treasury, -c.amount]);
        assert.equal(c.buyer + c.fee + c.treasury, c.amount);
        const event = escrowEvents(receipt, f.escrow)[0];
        assert.equal(event?.eventName, "Released");
        assert.ok(event?.eventName === "Released");
        assert.deepEqual(
          [event.args.buyerAmount, getAddress(event.args.feeRecipient), event.args.feeAmount, event.args.treasuryAmount],
          [c.buyer, payee, c.fee, c.treasury],
        );
        // Zero amounts are not transferred at all.
        const transfers = receipt.logs.filter((log) => getAddress(log.address) === f.usdc).length;
        assert.equal(transfers, [c.buyer, c.fee, c.treasury].filter((v) => v > 0n).length);
      });
    }
  });
});

describe("refundExpiredLock", () => {
  it("lets anyone refund the seller at lock expiry, not a second before", async () => {
    const f = await loadFixture();
    const terms = await f.depositAndLock({ lockWindow: 900n, amount: 42n * USDC });
    const { lockExpiresAt } = await f.getOrder(terms.orderId);
    await f.testClient.setNextBlockTimestamp({ timestamp: lockExpiresAt - 1n });
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "LockNotExpired", [lockExpiresAt]);
    await f.testClient.setNextBlockTimestamp({ timestamp: lockExpiresAt });
    const before = await f.balanceOf(f.seller.account.address);
    const receipt = await f.tx(f.stranger, "refundExpiredLock", [terms.orderId]);
    assert.equal((await f.balanceOf(f.seller.account.address)) - before, 42n * USDC);
    assertEvent(escrowEvents(receipt, f.escrow)[0], "Refunded", {
      orderId: terms.orderId,
      seller: f.seller.account.address,
      amount: 42n * USDC,
      reason: 0,
    });
    assert.equal((await f.getOrder(terms.orderId)).status, 5);
    await expectRevert(f.send(f.stranger, "refundExpiredLock", [terms.orderId]), "InvalidStatus", [terms.orderId, 5]);
    await expectRevert(f.send(f.service, "confirmPayment", [terms.orderId, newCep()]), "InvalidStatus", [terms.orderId, 5]);
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
    await expectRevert(f.send(f.buyer, "lock", [terms.orderId]), "InvalidStatus", [terms.orderId, 5]);
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
    await f.tx(f.buyer, "lock", [terms.orderId]);
    await expectRevert(f.send(f.service, "cancel", [terms.orderId]), "InvalidStatus", [terms.orderId, 2]);
    const other = await f.deposit();
    await f.tx(f.service, "cancel", [other.terms.orderId]);
    await expectRevert(f.send(f.service, "cancel", [other.terms.orderId]), "InvalidStatus", [other.terms.orderId, 5]);
  });
});
