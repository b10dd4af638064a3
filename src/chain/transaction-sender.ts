import { BaseError, ContractFunctionRevertedError, TransactionNotFoundError, encodeFunctionData, getAddress, keccak256, parseTransaction, type Address, type Hash, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { prepared, withTransaction, type Pool, type Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import type { Logger } from "../logger.ts";
import { disputeOutcome, escrowAbi, escrowOrderStatus } from "./escrow-abi.ts";
import type { EscrowGateway, EscrowStatus } from "./escrow-gateway.ts";
import { broadcastRefusal, inProcessTurn } from "./wallet-sends.ts";
import { PermanentError, RetryableError } from "../domain/errors.ts";

/**
 * The escrow calls the service makes, who signs each, the on-chain status each requires, and whether it
 * acts on the order's buyer (releases to the lock's holder, penalises it or gives it a new window): such
 * a call is sent only while the escrow's lock is the one the order knows.
 */
const ACTIONS = {
  confirmPayment: { signer: "service", requires: "Locked", buyers: true },
  cancel: { signer: "service", requires: "Active", buyers: false },
  expireListing: { signer: "service", requires: "Active", buyers: false },
  refundExpiredLock: { signer: "service", requires: "Locked", buyers: false },
  resolveDispute: { signer: "arbiter", requires: "Disputed", buyers: true },
} as const satisfies Record<string, { signer: "service" | "arbiter"; requires: EscrowStatus; buyers: boolean }>;

export type EscrowAction = keyof typeof ACTIONS;

export interface TransactionRequest {
  orderId: string;
  action: EscrowAction;
  /** Unique per intent: asking twice with the same key records one transaction. */
  requestKey: string;
  params?: { outcome?: keyof typeof disputeOutcome };
}

interface TransactionRow {
  id: string;
  order_id: string;
  action: EscrowAction;
  params: { outcome?: keyof typeof disputeOutcome };
  tx_hash: Hash | null;
  raw_tx: Hex | null;
  nonce: string | null;
  from_address: Address | null;
  status: "PENDING" | "SENT" | "MINED" | "REVERTED" | "SKIPPED";
  /** Earlier fees of the stored transaction (same nonce), any of which may still be mined. */
  replaced_hashes: Hash[];
  escrow_order_id: Hex;
  cep_hash: Hex | null;
  /** The buyer whose lock the order holds (its applied Locked event); null before one. */
  buyer_wallet: string | null;
}

/**
 * Whether the escrow, in the status the row's action needs, is locked by another buyer than the order's:
 * a release or a resolution is then refused by the escrow (it names the order's buyer: NotLockHolder).
 */
function lockedByAnotherBuyer(row: Pick<TransactionRow, "action" | "buyer_wallet">, escrow: { status: EscrowStatus; buyer: Address }): boolean {
  const { requires, buyers } = ACTIONS[row.action];
  return buyers && escrow.status === requires && escrow.buyer.toLowerCase() !== row.buyer_wallet?.toLowerCase();
}

/** Where a request stands after a step: SENT is broadcast and not mined yet (look again later). */
export type SendOutcome = "SENT" | "MINED" | "REVERTED" | "SKIPPED";

/** A revert that may pass later (a deadline not reached yet): the job is retried. */
export class TransactionNotYetPossibleError extends RetryableError {}

/** Broadcast and not mined yet: the confirmation is retried. */
export class TransactionNotYetMinedError extends RetryableError {}

/**
 * Records a transaction the service must send, in the caller's transaction: the order transition and
 * its transaction request commit together. Returns the request id, or undefined when already recorded.
 */
export async function recordTransactionRequest(tx: Queryable, request: TransactionRequest): Promise<string | undefined> {
  const signer = ACTIONS[request.action].signer;
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO chain_transactions (id, order_id, action, params, request_key, signer) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (request_key) DO NOTHING RETURNING id`,
    [newId("evt").replace("evt_", "ctx_"), request.orderId, request.action, JSON.stringify(request.params ?? {}), request.requestKey, signer],
  );
  return rows[0]?.id;
}

/** A signed transaction as stored: what the node must have, in its signer's nonce order. */
interface SignedTransaction {
  id: string;
  raw: Hex;
  hash: Hash;
  nonce: bigint;
  from: Address;
}

/** A checked request waiting for its nonce and signature. */
interface SigningRequest {
  id: string;
  call: { to: Address; data: Hex; gas: bigint; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
  /** The signer's pending transaction count on chain, read just before. */
  chainPending: number;
  replacing: Hash | null;
  settle(result: { ok: true; stored: { tx: SignedTransaction; broadcast: Promise<void> } | undefined } | { ok: false; error: unknown }): void;
}

/**
 * Sends each recorded transaction exactly once, many at a time per signer. The nonce comes from the
 * signer's counter in PostgreSQL (chain_signers), taken under its row lock in the transaction that
 * stores the signed bytes: one action, one nonce, one stored transaction, across instances. The bytes
 * are broadcast after that commit without waiting for the receipt (in nonce order within a process);
 * `process` is then called again (the confirmation job) until the receipt settles the row.
 *
 * After a crash or a dropped transaction, the same bytes are rebroadcast, with every stored transaction
 * of that signer the node lacks below it (a node that cannot queue a nonce gap, like Hardhat's automine,
 * refuses the later ones until the gap is filled). A new nonce is signed for an action only when the
 * chain shows its nonce consumed by another transaction, so the stored bytes can never be mined. Before
 * signing, the escrow's on-chain status is checked: an order the chain has already moved (refunded by
 * someone else, released, disputed) is SKIPPED, not sent. Unless the escrow is behind the order, not past
 * it: short of the status the action needs, or with one of the order's applied events removed by a
 * reorganisation and not mined again. Then the request waits for the chain (one that reverted on such an
 * escrow is signed anew). An action on the order's buyer also waits while another buyer holds the lock.
 *
 * Every transaction is watched until final (decisions section 7): it is settled only once its block has
 * `confirmations` blocks on top, so one that a reorganisation removed is found missing and its bytes are
 * sent again; one stuck below the going fee (its max fee under the latest block's base fee) is replaced
 * under the same nonce with fees at least 10 % higher, up to `maxFeePerGas`, and the hashes it replaced
 * are kept and looked up too. Whatever is re-sent or replaced is the same call under the same nonce, so
 * the action still happens once.
 */
export function createTransactionSender(deps: {
  pool: Pool;
  gateway: EscrowGateway;
  logger: Logger;
  /** Blocks on top of a transaction's before it is settled (CHAIN_CONFIRMATIONS); 0: at its receipt. */
  confirmations?: number;
  /** The highest max fee per gas, in wei, the service signs (MAX_FEE_PER_GAS_GWEI); none: no cap. */
  maxFeePerGas?: bigint | undefined;
}) {
  const { pool, gateway, logger } = deps;
  const confirmations = BigInt(deps.confirmations ?? 0);
  const cap = deps.maxFeePerGas;
  const accounts: Record<"service" | "arbiter", PrivateKeyAccount> = { service: gateway.service, arbiter: gateway.arbiter };
  const client = gateway.publicClient;

  const load = async (id: string): Promise<TransactionRow> => {
    const { rows } = await pool.query<TransactionRow>(
      prepared(
        `SELECT t.id, t.order_id, t.action, t.params, t.tx_hash, t.raw_tx, t.nonce, t.from_address, t.status, t.replaced_hashes, o.escrow_order_id, o.cep_hash, o.buyer_wallet
           FROM chain_transactions t JOIN orders o ON o.id = t.order_id WHERE t.id = $1`,
        [id],
      ),
    );
    if (!rows[0]) throw new PermanentError(`chain transaction ${id} does not exist`);
    return rows[0];
  };

  /**
   * Records the outcome of the transaction `hash` (or, for SKIPPED, of a row never signed); false when the
   * row has moved on. A replaced fee that was mined after all becomes the row's hash (its bytes are not
   * kept: nothing sends them again).
   */
  const finish = async (id: string, hash: Hash | null, status: Exclude<SendOutcome, "SENT">, error?: string): Promise<boolean> => {
    const { rowCount } = await pool.query(
      prepared(
        `UPDATE chain_transactions SET status = $3, error = $4, updated_at = now(),
                raw_tx = CASE WHEN tx_hash IS NOT DISTINCT FROM $2 THEN raw_tx END, tx_hash = COALESCE($2, tx_hash)
          WHERE id = $1 AND status IN ('PENDING', 'SENT') AND (tx_hash IS NOT DISTINCT FROM $2 OR $2 = ANY(replaced_hashes))`,
        [id, hash, status, error ?? null],
      ),
    );
    return rowCount === 1;
  };

  /** Releases and resolutions name the order's buyer: the escrow refuses them for any other lock holder. */
  const lockHolder = (row: TransactionRow): Address => {
    if (!row.buyer_wallet) throw new Error(`order ${row.order_id} has no buyer for ${row.action}`);
    return getAddress(row.buyer_wallet);
  };

  const calldata = (row: TransactionRow): Hex => {
    const id = row.escrow_order_id;
    switch (row.action) {
      case "confirmPayment":
        if (!row.cep_hash) throw new Error(`order ${row.order_id} has no verified CEP`);
        return encodeFunctionData({ abi: escrowAbi, functionName: "confirmPayment", args: [id, row.cep_hash, lockHolder(row)] });
      case "resolveDispute": {
        const outcome = row.params.outcome;
        if (!outcome) throw new Error(`dispute resolution ${row.id} has no outcome`);
        return encodeFunctionData({ abi: escrowAbi, functionName: "resolveDispute", args: [id, disputeOutcome[outcome], lockHolder(row)] });
      }
      default:
        return encodeFunctionData({ abi: escrowAbi, functionName: row.action, args: [id] });
    }
  };

  // Only "not found" means absent (gateway.transactionReceipt): a failure to read the chain is never
  // taken for a lost transaction (which would sign the action anew).
  const receiptOf = gateway.transactionReceipt;
  const knownToNode = (hash: Hash): Promise<boolean> =>
    client.getTransaction({ hash }).then(
      () => true,
      (error: unknown) => {
        if (error instanceof TransactionNotFoundError) return false;
        throw error;
      },
    );

  /**
   * The order's escrow event a reorganisation removed and the chain has not mined again, if any: until it
   * is, the escrow is behind the order (a dispute's resolution gone, so the escrow Disputed again while the
   * order, past it, asks for the release), and what the order asks for waits rather than being given up.
   * With `beforeBlock`, mined again only at that block or later counts as not mined again: the escrow was
   * behind at that block, even if the event is back by the time its receipt is read.
   */
  const awaitedOrphanedEvent = async (orderId: string, beforeBlock?: bigint): Promise<string | undefined> => {
    const { rows } = await pool.query<{ event_name: string }>(
      `SELECT a.event_name FROM applied_chain_events a
        WHERE a.order_id = $1 AND a.orphaned_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM applied_chain_events b
                           WHERE b.order_id = a.order_id AND b.event_name = a.event_name AND b.orphaned_at IS NULL AND b.applied_at > a.orphaned_at
                             AND ($2::bigint IS NULL OR b.block_number < $2))
        LIMIT 1`,
      [orderId, beforeBlock?.toString() ?? null],
    );
    return rows[0]?.event_name;
  };

  /**
   * Settles the row from the receipt of the transaction or of a fee it replaced, once final; SENT while
   * that receipt has fewer than `confirmations` blocks on top (a reorganisation may still remove it);
   * undefined when none of them is mined.
   */
  const outcomeOf = async (tx: SignedTransaction, row: TransactionRow, replaced: readonly Hash[] = []): Promise<SendOutcome | undefined> => {
    const { action } = row;
    for (const hash of [tx.hash, ...replaced]) {
      const receipt = await receiptOf(hash);
      if (!receipt) continue;
      if (confirmations > 0n && (await client.getBlockNumber({ cacheTime: 0 })) - receipt.blockNumber < confirmations) return "SENT";
      const status = receipt.status === "success" ? "MINED" : "REVERTED";
      if (status === "REVERTED") await signAgainIfBehind(row, hash, receipt.blockNumber);
      await finish(tx.id, hash, status, status === "REVERTED" ? "reverted on chain" : undefined);
      logger.info({ txId: tx.id, action, txHash: hash, nonce: tx.nonce.toString(), status }, "escrow transaction mined");
      return status;
    }
    return undefined;
  };

  /**
   * Every stored, unsettled transaction of `from` from the chain's mined count up to `below` (exclusive),
   * broadcast again in nonce order: the node takes a nonce only once the ones before it are there.
   */
  const fillGap = async (from: Address, below: bigint): Promise<void> => {
    const mined = BigInt(await client.getTransactionCount({ address: from, blockTag: "latest" }));
    if (mined >= below) return;
    const { rows } = await pool.query<{ raw_tx: Hex; nonce: string }>(
      "SELECT raw_tx, nonce FROM chain_transactions WHERE from_address = $1 AND nonce >= $2 AND nonce < $3 AND status = 'SENT' ORDER BY nonce",
      [from, mined.toString(), below.toString()],
    );
    for (const row of rows) {
      await client.sendRawTransaction({ serializedTransaction: row.raw_tx }).catch((error: unknown) => {
        if (broadcastRefusal(error) === "other") logger.warn({ err: error, from, nonce: row.nonce }, "gap fill: rebroadcast refused");
      });
    }
  };

  /**
   * Hands the stored bytes to the node. "Known" and "nonce too low" are not failures here: the receipt
   * (or its absence with the nonce consumed) decides. A gap below is filled from the stored rows, then
   * the bytes are sent once more.
   */
  const broadcast = async (tx: SignedTransaction): Promise<void> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.sendRawTransaction({ serializedTransaction: tx.raw });
        return;
      } catch (error) {
        const refusal = broadcastRefusal(error);
        if (refusal === "known" || refusal === "nonce-too-low") return;
        if (refusal !== "nonce-too-high" || attempt > 1) throw error;
        await fillGap(tx.from, tx.nonce);
      }
    }
  };

  /** Broadcasts of one signer leave this process in the order their nonces were taken. */
  const broadcastInTurn = (tx: SignedTransaction) => inProcessTurn(`broadcast:${tx.from.toLowerCase()}`, () => broadcast(tx));

  /**
   * Takes the signer's next nonces and stores each action's signed bytes under one, in one transaction
   * per group: requests that arrive while a group is being stored wait and go together in the next
   * (a group commit), so the counter's row lock is taken once per group, not per transaction. A request
   * is stored only if its row still holds `replacing` (null: never signed; else the hash whose nonce
   * the chain consumed); one that lost to another sender resolves undefined and takes no nonce. The
   * counter moves past the chain's pending count when something else used the signer. The broadcasts
   * are queued in nonce order as the group commits.
   */
  const waiting = new Map<Address, SigningRequest[]>();
  const storing = new Set<Address>();

  const storeGroup = async (from: Address, account: PrivateKeyAccount, group: SigningRequest[]): Promise<(SignedTransaction | undefined)[]> =>
    withTransaction(pool, async (db) => {
      const { rows: current } = await db.query<{ id: string; tx_hash: Hash | null }>(
        "SELECT id, tx_hash FROM chain_transactions WHERE id = ANY($1) AND status IN ('PENDING', 'SENT') ORDER BY id FOR UPDATE",
        [group.map((request) => request.id)],
      );
      const holding = new Map(current.map((row) => [row.id, row.tx_hash]));
      const eligible = group.map((request) => {
        const ok = holding.has(request.id) && holding.get(request.id) === request.replacing;
        holding.delete(request.id); // the same row twice in a group: only the first is signed
        return ok;
      });
      const count = eligible.filter(Boolean).length;
      if (count === 0) return group.map(() => undefined);
      const chainPending = Math.max(...group.map((request) => request.chainPending));
      const { rows } = await db.query<{ first: string }>(
        `INSERT INTO chain_signers (address, next_nonce) VALUES ($1, $2::bigint + $3)
         ON CONFLICT (address) DO UPDATE SET next_nonce = GREATEST(chain_signers.next_nonce, $2::bigint) + $3, updated_at = now()
         RETURNING next_nonce - $3 AS first`,
        [from, chainPending, count],
      );
      let nonce = BigInt(rows[0]!.first);
      const signed: (SignedTransaction | undefined)[] = [];
      for (const [index, request] of group.entries()) {
        if (!eligible[index]) {
          signed.push(undefined);
          continue;
        }
        const raw = await account.signTransaction({ ...request.call, nonce: Number(nonce), chainId: gateway.chain.id, type: "eip1559" });
        signed.push({ id: request.id, raw, hash: keccak256(raw), nonce, from });
        nonce += 1n;
      }
      const stored = signed.filter((tx): tx is SignedTransaction => tx !== undefined);
      await db.query(
        `UPDATE chain_transactions t SET raw_tx = v.raw, tx_hash = v.hash, nonce = v.nonce, from_address = $5, status = 'SENT', replaced_hashes = '{}', updated_at = now()
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS v (id, raw, hash, nonce) WHERE t.id = v.id`,
        [stored.map((tx) => tx.id), stored.map((tx) => tx.raw), stored.map((tx) => tx.hash), stored.map((tx) => tx.nonce.toString()), from],
      );
      return signed;
    });

  const storeWaiting = async (from: Address, account: PrivateKeyAccount): Promise<void> => {
    storing.add(from);
    try {
      for (let group = waiting.get(from); group?.length; group = waiting.get(from)) {
        waiting.delete(from);
        try {
          const signed = await storeGroup(from, account, group);
          for (const [index, request] of group.entries()) {
            const tx = signed[index];
            request.settle({ ok: true, stored: tx && { tx, broadcast: broadcastInTurn(tx) } });
          }
        } catch (error) {
          for (const request of group) request.settle({ ok: false, error });
        }
      }
    } finally {
      storing.delete(from);
    }
  };

  const signAndStore = (account: PrivateKeyAccount, request: Omit<SigningRequest, "settle">): Promise<{ tx: SignedTransaction; broadcast: Promise<void> } | undefined> => {
    const from = account.address.toLowerCase() as Address;
    return new Promise((resolve, reject) => {
      const queue = waiting.get(from) ?? [];
      queue.push({ ...request, settle: (result) => (result.ok ? resolve(result.stored) : reject(result.error)) });
      waiting.set(from, queue);
      if (!storing.has(from)) void storeWaiting(from, account);
    });
  };

  /**
   * Why the escrow could not take the row's action at `block`, if a reorganisation is the reason: the
   * order's removed event the chain has not mined again by then, or (for an action naming the order's
   * buyer) another buyer's lock on the escrow, which the escrow refuses (NotLockHolder). The chain is
   * read for the second, so it counts even before the consumer has reported the order's lock removed.
   */
  const behindAt = async (row: TransactionRow, block: bigint): Promise<string | undefined> => {
    const awaited = await awaitedOrphanedEvent(row.order_id, block);
    if (awaited) return `the chain has the order's ${awaited} again`;
    if (!ACTIONS[row.action].buyers) return undefined;
    const escrow = await gateway.escrowOrder(row.escrow_order_id, block);
    return lockedByAnotherBuyer(row, escrow) ? `the escrow is no longer locked by ${escrow.buyer}, another buyer` : undefined;
  };

  /**
   * A transaction that reverted because the escrow was behind the order (sent again after a reorganisation
   * and mined, at `block`, before the order's own removed event was mined again, or while another buyer
   * held the lock): its nonce is spent and nothing happened, so the row goes back to unsigned and is
   * signed anew once the escrow has caught up (at once if the event is back by now: a chaos run's
   * resolution, read late, was given up as REVERTED).
   */
  const signAgainIfBehind = async (row: TransactionRow, hash: Hash, block: bigint): Promise<void> => {
    const until = await behindAt(row, block);
    if (!until) return;
    const { rowCount } = await pool.query(
      `UPDATE chain_transactions SET status = 'PENDING', raw_tx = NULL, tx_hash = NULL, nonce = NULL, from_address = NULL, replaced_hashes = '{}', error = $3, updated_at = now()
        WHERE id = $1 AND status IN ('PENDING', 'SENT') AND (tx_hash = $2 OR $2 = ANY(replaced_hashes))`,
      [row.id, hash, `${hash} reverted while the escrow was behind the order; signed again once ${until}`],
    );
    if (rowCount === 1) logger.warn({ txId: row.id, orderId: row.order_id, action: row.action, txHash: hash, until }, "escrow transaction reverted behind a reorganisation; signed again once the escrow catches up");
    throw new TransactionNotYetPossibleError(`${row.action} waits until ${until}`);
  };

  /** Checks, signs under a fresh nonce, stores, broadcasts and looks for the receipt once. */
  const sendNew = async (row: TransactionRow, replacing: Hash | null): Promise<SendOutcome> => {
    const account = accounts[ACTIONS[row.action].signer];
    const data = calldata(row);
    const to = gateway.settings.escrowAddress;
    // Independent reads, made together so the transport sends them as one JSON-RPC batch (rpc-transport.ts).
    // The estimate is against the pending block (on an idle chain the latest block's timestamp may predate
    // a deadline the next block will have passed), and is also the revert check.
    const [escrow, estimate, fees, chainPending] = await Promise.all([
      gateway.escrowOrder(row.escrow_order_id),
      client.estimateGas({ account: account.address, to, data, blockTag: "pending" }).then(
        (gas) => ({ gas }),
        (error: unknown) => ({ error }),
      ),
      client.estimateFeesPerGas({ chain: gateway.chain }),
      client.getTransactionCount({ address: account.address, blockTag: "pending" }),
    ]);
    const { status } = escrow;
    const { requires } = ACTIONS[row.action];
    if (lockedByAnotherBuyer(row, escrow)) {
      // Another buyer's lock: a reorganisation removed the order's, and someone else locked the escrow
      // before it was mined again. The escrow would refuse the call (it names the order's buyer: NotLockHolder,
      // which also guards bytes signed earlier and sent again); the chain has to move on (that lock
      // expiring, the order's own mined again) or an operator has to step in.
      logger.error(
        { txId: row.id, orderId: row.order_id, action: row.action, escrowBuyer: escrow.buyer, orderBuyer: row.buyer_wallet },
        "the escrow is locked by another buyer than the order's: the action is held",
      );
      throw new TransactionNotYetPossibleError(`${row.action} held: the escrow is locked by ${escrow.buyer}, not by the order's buyer ${row.buyer_wallet ?? "(none)"}`);
    }
    if (status !== requires) {
      // Short of the status the action needs (statuses move forward in this order; the one step back, a
      // dispute's retry, is this sender's own, once per dispute): a reorganisation removed an event the
      // order has moved on from, and the service may not know yet (its consumer behind), so the action
      // waits for the chain to mine it again. Past it: the chain moved on without us; the action is pointless.
      if (escrowOrderStatus.indexOf(status) < escrowOrderStatus.indexOf(requires)) {
        throw new TransactionNotYetPossibleError(`${row.action} waits: the escrow is ${status}, behind the order (${requires}); a reorganisation removed an event the chain has not mined again`);
      }
      const awaited = await awaitedOrphanedEvent(row.order_id);
      if (awaited) throw new TransactionNotYetPossibleError(`${row.action} waits: the escrow is ${status}, behind the order, whose ${awaited} a reorganisation removed and the chain has not mined again`);
      if (await finish(row.id, replacing, "SKIPPED", "the escrow is no longer in the state this action needs")) return "SKIPPED";
      return step(row.id);
    }
    if ("error" in estimate) {
      const { error } = estimate;
      const revert = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
      throw new TransactionNotYetPossibleError(`${row.action} would revert: ${(revert as Error | undefined)?.message ?? (error as Error).message}`);
    }
    const { gas } = estimate;
    // Above the cap it is signed at the cap, and waits (or is replaced) until the base fee comes down.
    const maxFeePerGas = cap !== undefined && fees.maxFeePerGas > cap ? cap : fees.maxFeePerGas;
    const call = { to, data, gas, maxFeePerGas, maxPriorityFeePerGas: min(fees.maxPriorityFeePerGas, maxFeePerGas) };
    const signed = await signAndStore(account, { id: row.id, call, chainPending, replacing });
    if (!signed) return step(row.id);
    await signed.broadcast;
    return (await outcomeOf(signed.tx, row)) ?? "SENT";
  };

  /**
   * A pending transaction whose max fee is under the latest block's base fee cannot be included until the
   * base fee falls: it is signed again under its nonce with the same call and fees at least 10 % higher
   * (what nodes require of a replacement), at least the going estimate, at most the cap. At the cap it
   * stays as it is, reported in the log and on the row, and waits for the base fee to come down.
   */
  const replaceIfUnderpriced = async (row: TransactionRow, tx: SignedTransaction): Promise<SendOutcome> => {
    const sent = parseTransaction(tx.raw);
    if (sent.type !== "eip1559" || !sent.to || sent.maxFeePerGas === undefined || sent.maxPriorityFeePerGas === undefined || sent.gas === undefined) return "SENT";
    const { baseFeePerGas } = await client.getBlock({ blockTag: "latest" });
    if (baseFeePerGas === null || sent.maxFeePerGas >= baseFeePerGas) return "SENT";
    const going = await client.estimateFeesPerGas({ chain: gateway.chain });
    let maxFeePerGas = max(raised(sent.maxFeePerGas), going.maxFeePerGas);
    const maxPriorityFeePerGas = max(raised(sent.maxPriorityFeePerGas), going.maxPriorityFeePerGas);
    if (cap !== undefined && maxFeePerGas > cap) maxFeePerGas = cap;
    if (maxFeePerGas < raised(sent.maxFeePerGas) || maxPriorityFeePerGas > maxFeePerGas) {
      const error = `stuck: max fee ${sent.maxFeePerGas} wei under the base fee ${baseFeePerGas} wei, and MAX_FEE_PER_GAS_GWEI leaves no room for a replacement`;
      await pool.query("UPDATE chain_transactions SET error = $3, updated_at = now() WHERE id = $1 AND tx_hash = $2 AND status = 'SENT' AND error IS DISTINCT FROM $3", [tx.id, tx.hash, error]);
      logger.warn({ txId: tx.id, action: row.action, txHash: tx.hash, maxFeePerGas: sent.maxFeePerGas.toString(), baseFeePerGas: baseFeePerGas.toString(), cap: cap?.toString() }, "escrow transaction stuck at the fee cap");
      return "SENT";
    }
    const account = accounts[ACTIONS[row.action].signer];
    const raw = await account.signTransaction({ to: sent.to, data: sent.data ?? "0x", gas: sent.gas, nonce: Number(tx.nonce), chainId: gateway.chain.id, type: "eip1559", maxFeePerGas, maxPriorityFeePerGas });
    const replacement: SignedTransaction = { ...tx, raw, hash: keccak256(raw) };
    const { rowCount } = await pool.query(
      `UPDATE chain_transactions SET raw_tx = $3, tx_hash = $4, replaced_hashes = array_append(replaced_hashes, tx_hash), error = NULL, updated_at = now()
        WHERE id = $1 AND tx_hash = $2 AND status = 'SENT'`,
      [tx.id, tx.hash, raw, replacement.hash],
    );
    if (rowCount !== 1) return "SENT"; // another worker moved the row on: the next look starts from it
    logger.info({ txId: tx.id, action: row.action, replaced: tx.hash, txHash: replacement.hash, nonce: tx.nonce.toString(), maxFeePerGas: maxFeePerGas.toString(), baseFeePerGas: baseFeePerGas.toString() }, "escrow transaction replaced with a higher fee");
    await broadcastInTurn(replacement);
    return (await outcomeOf(replacement, row, [...row.replaced_hashes, tx.hash])) ?? "SENT";
  };

  /**
   * A stored transaction not yet settled: mined (final or still confirming), pending (replaced if stuck
   * under the base fee), lost (rebroadcast), or its nonce taken by another transaction (sign anew).
   */
  const settle = async (row: TransactionRow & { raw_tx: Hex; tx_hash: Hash }): Promise<SendOutcome> => {
    const account = accounts[ACTIONS[row.action].signer];
    const tx: SignedTransaction = { id: row.id, raw: row.raw_tx, hash: row.tx_hash, nonce: BigInt(row.nonce ?? 0), from: row.from_address ?? (account.address.toLowerCase() as Address) };
    const outcome = await outcomeOf(tx, row, row.replaced_hashes);
    if (outcome) return outcome;
    if (await knownToNode(tx.hash)) return replaceIfUnderpriced(row, tx);
    const mined = BigInt(await client.getTransactionCount({ address: tx.from, blockTag: "latest" }));
    if (tx.nonce >= mined) {
      // Not with this node (a crash before the broadcast, a transaction dropped from the mempool, or one
      // whose block a reorganisation removed): the same bytes again.
      await broadcastInTurn(tx);
      return (await outcomeOf(tx, row, row.replaced_hashes)) ?? "SENT";
    }
    // Read after the nonce count: a receipt that appeared in between is still found.
    const late = await outcomeOf(tx, row, row.replaced_hashes);
    if (late) return late;
    logger.warn({ txId: row.id, nonce: row.nonce }, "stored transaction can no longer be mined (nonce consumed); signing anew");
    return sendNew(row, tx.hash);
  };

  /** Moves the request one step on; idempotent, so a retried or duplicated job does no harm. */
  const step = async (id: string): Promise<SendOutcome> => {
    const row = await load(id);
    if (row.status === "MINED" || row.status === "REVERTED" || row.status === "SKIPPED") return row.status;
    if (row.raw_tx && row.tx_hash) return settle({ ...row, raw_tx: row.raw_tx, tx_hash: row.tx_hash });
    return sendNew(row, null);
  };

  return { process: step };
}

export type TransactionSender = ReturnType<typeof createTransactionSender>;

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);
/** A fee raised by at least 10 %, rounded up: the least a node takes to replace a pending transaction. */
const raised = (fee: bigint): bigint => fee + (fee + 9n) / 10n;
