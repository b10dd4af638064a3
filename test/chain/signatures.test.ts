// The service signs its transactions and recovers payment reports' signers with libsecp256k1
// (src/chain/secp256k1.ts): its transactions, messages and typed data must be exactly viem's, and the
// signer it recovers viem's, for every signature viem accepts; what viem refuses is no signer.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { getAddress, numberToHex, recoverMessageAddress, toHex, type Hex, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localAccount, recoverMessageSigner } from "../../src/chain/secp256k1.ts";

const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const key = (): Hex => toHex(randomBytes(32));
const address = () => getAddress(toHex(randomBytes(20)));
const word = (bytes: number) => BigInt(toHex(randomBytes(bytes)));

test("transactions are signed exactly as viem signs them: EIP-1559, EIP-2930 and legacy (EIP-155)", async () => {
  for (let i = 0; i < 10; i += 1) {
    const privateKey = key();
    const ours = localAccount(privateKey);
    const viems = privateKeyToAccount(privateKey);
    assert.equal(ours.address, viems.address);
    const call = { to: address(), data: toHex(randomBytes(68)), gas: word(3), nonce: Number(word(2)), chainId: 8453, value: word(4) };
    // The fee cap is never below the tip: viem refuses such a transaction before signing it.
    const tip = word(4);
    const transactions: TransactionSerializable[] = [
      { ...call, type: "eip1559", maxFeePerGas: tip + word(5), maxPriorityFeePerGas: tip },
      { ...call, type: "eip2930", gasPrice: word(5), accessList: [{ address: address(), storageKeys: [toHex(randomBytes(32))] }] },
      { ...call, type: "legacy", gasPrice: word(5) },
    ];
    for (const transaction of transactions) {
      assert.equal(await ours.signTransaction(transaction), await viems.signTransaction(transaction), transaction.type);
    }
  }
});

test("messages, typed data and digests are signed exactly as viem signs them", async () => {
  const privateKey = key();
  const ours = localAccount(privateKey);
  const viems = privateKeyToAccount(privateKey);
  for (const message of ["", "Offramp payment report\nOrder: 0x01", { raw: toHex(randomBytes(40)) }] as const) {
    assert.equal(await ours.signMessage({ message }), await viems.signMessage({ message }));
  }
  const typedData = {
    domain: { name: "Test", version: "1", chainId: 8453, verifyingContract: address() },
    types: { Mail: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }] },
    primaryType: "Mail",
    message: { to: address(), amount: word(16) },
  } as const;
  assert.equal(await ours.signTypedData(typedData), await viems.signTypedData(typedData));
  const hash = toHex(randomBytes(32));
  assert.equal(await ours.sign!({ hash }), await viems.sign!({ hash }));
});

test("a message's signer is recovered as viem recovers it, with v as 0/1 or 27/28 and with a high s", async () => {
  for (let i = 0; i < 20; i += 1) {
    const signer = privateKeyToAccount(key());
    const message = `report ${toHex(randomBytes(8))}`;
    const signature = await signer.signMessage({ message });
    const v = Number.parseInt(signature.slice(130), 16);
    const s = BigInt(`0x${signature.slice(66, 130)}`);
    const variants: Hex[] = [
      signature,
      `${signature.slice(0, 130)}${numberToHex(v - 27, { size: 1 }).slice(2)}` as Hex,
      // The same point with s negated and the parity flipped: valid, though not low-s.
      `${signature.slice(0, 66)}${numberToHex(CURVE_ORDER - s, { size: 32 }).slice(2)}${numberToHex(v === 27 ? 28 : 27, { size: 1 }).slice(2)}` as Hex,
    ];
    for (const variant of variants) {
      assert.equal(recoverMessageSigner(message, variant), await recoverMessageAddress({ message, signature: variant }));
      assert.equal(recoverMessageSigner(message, variant), signer.address);
    }
    assert.notEqual(recoverMessageSigner(`${message} `, signature), signer.address, "another text, another signer");
  }
});

test("what is not a signature has no signer: r or s zero or past the curve's order, v out of range, wrong length", async () => {
  const signature = await privateKeyToAccount(key()).signMessage({ message: "m" });
  const r = signature.slice(2, 66);
  const s = signature.slice(66, 130);
  const order = numberToHex(CURVE_ORDER, { size: 32 }).slice(2);
  const broken: Hex[] = [
    `0x${"00".repeat(32)}${s}1b`,
    `0x${r}${"00".repeat(32)}1b`,
    `0x${order}${s}1b`,
    `0x${r}${order}1c`,
    `0x${r}${s}02`,
    `0x${r}${s}1d`,
    `0x${r}${s}`,
    `${signature}00`,
  ];
  for (const signature of broken) {
    assert.equal(recoverMessageSigner("m", signature), undefined, signature);
    await assert.rejects(recoverMessageAddress({ message: "m", signature }).then((found) => assert.fail(`viem recovered ${found} from ${signature}`)));
  }
});
