// The gateway hashes the escrow's EIP-712 domain once, each message's fields straight into one buffer
// (src/chain/typed-data.ts), and signs each message's digest with libsecp256k1
// (src/chain/escrow-gateway.ts): its signatures must be exactly viem's signTypedData's, for every value
// the messages can carry. The contract's own check of them is test/orders/signed-terms.test.ts.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { getAddress, toHex, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowEip712Domain, lockPermitTypes, orderTermsTypes } from "../../src/chain/escrow-abi.ts";
import { createEscrowGateway, type ChainSettings, type LockPermit, type OrderTerms } from "../../src/chain/escrow-gateway.ts";
import { structHasher } from "../../src/chain/typed-data.ts";

const settings: ChainSettings = {
  rpcUrl: "http://127.0.0.1:1", // never called: signing is local
  chainId: 8453,
  escrowAddress: getAddress(toHex(randomBytes(20))),
  usdcAddress: getAddress(toHex(randomBytes(20))),
  servicePrivateKey: toHex(randomBytes(32)),
  arbiterPrivateKey: toHex(randomBytes(32)),
};
const gateway = createEscrowGateway(settings);
const viemSigner = privateKeyToAccount(settings.servicePrivateKey);
const domain = { ...escrowEip712Domain, chainId: settings.chainId, verifyingContract: settings.escrowAddress } as const;

const word = (bytes: number) => BigInt(toHex(randomBytes(bytes)));
const address = (): Address => getAddress(toHex(randomBytes(20)));
const orderId = (): Hex => toHex(randomBytes(32));

test("deposit terms are signed exactly as viem's signTypedData signs them, extreme values included", async () => {
  const cases: OrderTerms[] = [
    { orderId: orderId(), token: settings.usdcAddress, amount: 1n, feeBps: 0, feeRecipient: "0x0000000000000000000000000000000000000000", treasuryShareBps: 0, depositDeadline: 0n, listingWindow: 0n, lockWindow: 0n },
    { orderId: `0x${"ff".repeat(32)}`, token: address(), amount: 2n ** 256n - 1n, feeBps: 65_535, feeRecipient: address(), treasuryShareBps: 65_535, depositDeadline: 2n ** 64n - 1n, listingWindow: 2n ** 64n - 1n, lockWindow: 2n ** 64n - 1n },
    ...Array.from({ length: 20 }, () => ({
      orderId: orderId(),
      token: address(),
      amount: word(16),
      feeBps: Number(word(2) % 10_001n),
      feeRecipient: address(),
      treasuryShareBps: Number(word(2) % 10_001n),
      depositDeadline: word(5),
      listingWindow: word(3),
      lockWindow: word(3),
    })),
  ];
  for (const terms of cases) {
    assert.equal(await gateway.signTerms(terms), await viemSigner.signTypedData({ domain, types: orderTermsTypes, primaryType: "OrderTerms", message: terms }));
  }
});

test("lock permits are signed exactly as viem's signTypedData signs them", async () => {
  for (let i = 0; i < 20; i += 1) {
    const permit: LockPermit = { orderId: orderId(), buyer: address(), deadline: word(5) };
    assert.equal(await gateway.signLockPermit(permit), await viemSigner.signTypedData({ domain, types: lockPermitTypes, primaryType: "LockPermit", message: permit }));
  }
});

test("a value out of its EIP-712 type is refused, not signed", async () => {
  const terms: OrderTerms = { orderId: orderId(), token: address(), amount: 1n, feeBps: 65_536, feeRecipient: address(), treasuryShareBps: 0, depositDeadline: 1n, listingWindow: 1n, lockWindow: 1n };
  await assert.rejects(async () => gateway.signTerms(terms));
  await assert.rejects(async () => gateway.signTerms({ ...terms, feeBps: 0, depositDeadline: 2n ** 64n }));
  await assert.rejects(async () => gateway.signTerms({ ...terms, feeBps: 0, token: "0x1234" as Address }));
  await assert.rejects(async () => gateway.signTerms({ ...terms, feeBps: 0, amount: -1n }));
  await assert.rejects(async () => gateway.signTerms({ ...terms, feeBps: 1.5 }));
  await assert.rejects(async () => gateway.signTerms({ ...terms, feeBps: 0, orderId: `0x${"ab".repeat(31)}` }));
  // Mixed case with a wrong checksum: viem refuses it too (a typo in a configured address).
  const checksummed = address();
  const wrongChecksum = `0x${[...checksummed.slice(2)].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join("")}` as Address;
  if (/[a-fA-F]/.test(checksummed.slice(2))) await assert.rejects(async () => gateway.signLockPermit({ orderId: orderId(), buyer: wrongChecksum, deadline: 1n }));
});

test("a struct with a field that is not one word is refused when its hasher is made", () => {
  assert.throws(() => structHasher({ Note: [{ name: "text", type: "string" }] }, "Note"), /not a single word/);
  assert.throws(() => structHasher({ Outer: [{ name: "inner", type: "Inner" }], Inner: [{ name: "id", type: "bytes32" }] }, "Outer"), /not a single word/);
});
