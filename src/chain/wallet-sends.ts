// One wallet's transactions, one at a time. A nonce is the wallet's count of transactions, so two sends
// from one wallet that read it at the same moment sign the same nonce and one of them fails ("nonce too
// low"). Every send from a sandbox wallet therefore runs its nonce read, signing and broadcast under
// that wallet's lock (the service signer and the arbiter take their nonces from a counter in the
// database instead, transaction-sender.ts, and only borrow this file's in-process queue): a queue in this
// process, then a PostgreSQL advisory lock shared by every instance on the database (decisions sections
// 13 and 14: sandbox helpers called for many orders at once, several instances on one chain). The lock
// is held only until the node has taken the transaction (its pending count then includes it), not while
// it is mined, so many orders' sends follow each other closely.
import { BaseError, WaitForTransactionReceiptTimeoutError, keccak256, type Address, type Hash, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { Pool } from "../db/pool.ts";
import { ChainUnavailableError, InvalidStateError } from "../domain/errors.ts";
import type { EscrowGateway } from "./escrow-gateway.ts";

const queues = new Map<string, Promise<unknown>>();

/** Runs `work` after every earlier call for `key` in this process has finished. */
export function inProcessTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.then(work, work);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}

/**
 * `work` alone among every sender of `address`: in this process (a queue, so waiting costs no database
 * session) and across instances (a session advisory lock on one pooled connection).
 */
export function withSignerLock<T>(pool: Pool, address: Address, work: () => Promise<T>): Promise<T> {
  const key = `signer:${address.toLowerCase()}`;
  return inProcessTurn(key, async () => {
    const client = await pool.connect();
    let locked = false;
    try {
      await client.query("SELECT pg_advisory_lock(hashtext($1))", [key]);
      locked = true;
      return await work();
    } finally {
      // A session whose unlock fails is closed rather than returned to the pool, so it cannot keep the lock.
      const unlocked = locked ? await client.query("SELECT pg_advisory_unlock(hashtext($1))", [key]).then(() => true, () => false) : true;
      client.release(!unlocked);
    }
  });
}

/** Why a node refused a signed transaction, as far as nonces go. */
export type BroadcastRefusal = "known" | "nonce-too-low" | "nonce-too-high" | "other";

export function broadcastRefusal(error: unknown): BroadcastRefusal {
  const text = error instanceof BaseError ? `${error.shortMessage} ${error.details ?? ""}` : String((error as Error)?.message ?? error);
  if (/already known|known transaction/i.test(text)) return "known";
  if (/nonce too high|nonce.*gap/i.test(text)) return "nonce-too-high";
  if (/nonce too low|nonce has already been used|replacement transaction underpriced|nonce.*(taken|conflict)/i.test(text)) return "nonce-too-low";
  return "other";
}

/** The node refused the transaction because its nonce is taken (a sender outside these locks). */
function isNonceConflict(error: unknown): boolean {
  const refusal = broadcastRefusal(error);
  return refusal === "known" || refusal === "nonce-too-low";
}

export interface WalletCall {
  to: Address;
  data: Hex;
  /** Wei sent with the call (the sandbox faucet). */
  value?: bigint;
}

/** A transaction the node has taken: its hash, and its signed bytes, which broadcast again are the same transaction. */
export interface SentTransaction {
  hash: Hash;
  raw: Hex;
}

/**
 * Sends `call` from `account` under its signer lock and returns it once the node has taken it (not
 * mined: see waitUntilMined). A revert shows at gas estimation and is thrown as viem reports it,
 * with no nonce used. Should another sender outside these locks take the nonce first, it signs again
 * with the next one (a few times), unless the node already has this very transaction.
 */
export async function sendFromWallet(deps: { pool: Pool; gateway: EscrowGateway }, account: PrivateKeyAccount, call: WalletCall): Promise<SentTransaction> {
  const { gateway } = deps;
  const wallet = gateway.walletClient(account);
  return withSignerLock(deps.pool, account.address, async () => {
    for (let attempt = 1; ; attempt += 1) {
      const nonce = await gateway.publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
      const request = await wallet.prepareTransactionRequest({ ...call, nonce, chain: gateway.chain });
      const raw = await wallet.signTransaction(request);
      const hash = keccak256(raw);
      try {
        await gateway.publicClient.sendRawTransaction({ serializedTransaction: raw });
        return { hash, raw };
      } catch (error) {
        if (!isNonceConflict(error)) throw error;
        // A retried request whose first attempt reached the node: the transaction is there already.
        if (await gateway.publicClient.getTransaction({ hash }).then(() => true, () => false)) return { hash, raw };
        // The nonce still taken after five fresh reads (a stuck transaction of this wallet under a rising
        // base fee, or a node behind on its pending pool): the chain cannot take this send now, and a
        // later request can (503 CHAIN_UNAVAILABLE, not a 500).
        if (attempt >= 5) throw Object.assign(new ChainUnavailableError(10), { cause: error });
      }
    }
  });
}

/** Receipt waits one waitUntilMined makes, each this long: 30 s in all. */
const RECEIPT_WAITS = 3;
const RECEIPT_WAIT_MS = 10_000;

/**
 * Waits until `sent` is mined and returns its hash; reverted on chain, it is InvalidStateError. A wait
 * that ends with no receipt broadcasts the same signed bytes again (a reorganisation or a node's drop
 * removed it; the same bytes are the same transaction, never a second one) and waits again; after
 * RECEIPT_WAITS, 503 CHAIN_UNAVAILABLE: a later request can get through, where this one could not.
 *
 * viem's search for a replacement is off: around a reorganisation it can reject with BlockNotFoundError
 * (the block it searches is gone) or TransactionReceiptNotFoundError (so is the receipt of what it found
 * there), which answered 500, and it takes any transaction of the wallet at the same nonce for this one.
 * Without it the wait polls this hash's receipt and, finding none, ends with
 * WaitForTransactionReceiptTimeoutError (viem 2.57, actions/public/waitForTransactionReceipt.ts).
 */
export async function waitUntilMined(gateway: Pick<EscrowGateway, "publicClient">, sent: SentTransaction): Promise<Hash> {
  for (let wait = 1; ; wait += 1) {
    const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash: sent.hash, timeout: RECEIPT_WAIT_MS, checkReplacement: false }).catch((error: unknown) => {
      if (!(error instanceof WaitForTransactionReceiptTimeoutError)) throw error;
      if (wait >= RECEIPT_WAITS) throw Object.assign(new ChainUnavailableError(10), { cause: error });
      return undefined;
    });
    if (receipt) {
      if (receipt.status !== "success") throw new InvalidStateError("The transaction reverted on chain");
      return sent.hash;
    }
    // Refused as known (still pending) or its nonce as used (mined meanwhile, or taken by another of the
    // wallet's transactions): the next wait tells which.
    await gateway.publicClient.sendRawTransaction({ serializedTransaction: sent.raw }).catch((error: unknown) => {
      if (broadcastRefusal(error) === "other") throw error;
    });
  }
}
