// The service's secp256k1 work done by libsecp256k1 (tiny-secp256k1, WebAssembly) rather than viem's
// @noble/curves, which was 5% of the service's CPU under full trades (figure 5's profile, stop 37): the
// release's transaction signature and the recovery of a payment report's signer. Same bytes as viem
// (RFC 6979 nonces, low s), at a third of the time or less; checked against viem in
// test/chain/signatures.test.ts.
import { recover, signRecoverable } from "tiny-secp256k1";
import {
  bytesToHex,
  hashMessage,
  hashTypedData,
  hexToBytes,
  keccak256,
  parseSignature,
  serializeSignature,
  serializeTransaction,
  type Address,
  type Hex,
  type SignableMessage,
  type TransactionSerializable,
} from "viem";
import { privateKeyToAccount, publicKeyToAddress, type PrivateKeyAccount } from "viem/accounts";

/** The 65-byte signature (r, s, v = 27 + y parity) of a 32-byte digest. */
export function signDigest(digest: Hex, privateKey: Uint8Array): Hex {
  const { signature, recoveryId } = signRecoverable(hexToBytes(digest), privateKey);
  return serializeSignature({ r: bytesToHex(signature.subarray(0, 32)), s: bytesToHex(signature.subarray(32, 64)), yParity: recoveryId });
}

/** viem's local account of `privateKey`, whose digests, messages, typed data and transactions are signed here. */
export function localAccount(privateKey: Hex): PrivateKeyAccount {
  const account = privateKeyToAccount(privateKey);
  const key = hexToBytes(privateKey);
  const sign = async ({ hash }: { hash: Hex }): Promise<Hex> => signDigest(hash, key);
  return {
    ...account,
    sign,
    signMessage: async ({ message }: { message: SignableMessage }) => sign({ hash: hashMessage(message) }),
    signTypedData: (async (typedData: Parameters<typeof hashTypedData>[0]) => sign({ hash: hashTypedData(typedData) })) as PrivateKeyAccount["signTypedData"],
    // As viem's signTransaction: the serialized transaction's hash signed, then serialized with the signature.
    signTransaction: (async (transaction: TransactionSerializable, options?: { serializer?: typeof serializeTransaction }) => {
      const serializer = options?.serializer ?? serializeTransaction;
      const signable = transaction.type === "eip4844" ? { ...transaction, sidecars: false as const } : transaction;
      return serializer(transaction, parseSignature(signDigest(keccak256(await serializer(signable)), key)));
    }) as PrivateKeyAccount["signTransaction"],
  };
}

/**
 * The address whose key signed `message` (EIP-191), as viem's recoverMessageAddress finds it; undefined
 * for a signature that is not one (r or s out of range, v other than 0, 1, 27 or 28, no point).
 */
export function recoverMessageSigner(message: SignableMessage, signature: Hex): Address | undefined {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return undefined;
  const v = Number.parseInt(signature.slice(130), 16);
  const recoveryId = v === 0 || v === 27 ? 0 : v === 1 || v === 28 ? 1 : undefined;
  if (recoveryId === undefined) return undefined;
  try {
    const key = recover(hexToBytes(hashMessage(message)), hexToBytes(`0x${signature.slice(2, 130)}`), recoveryId, false);
    return key ? publicKeyToAddress(bytesToHex(key)) : undefined;
  } catch {
    return undefined; // r or s zero or not below the curve's order
  }
}
