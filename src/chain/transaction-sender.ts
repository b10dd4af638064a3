import { BaseError, ContractFunctionRevertedError, encodeFunctionData, keccak256, type Hash, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { Pool, Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import type { Logger } from "../logger.ts";
import { disputeOutcome, escrowAbi } from "./escrow-abi.ts";
import type { EscrowGateway, EscrowStatus } from "./escrow-gateway.ts";
import { withSignerLock } from "./wallet-sends.ts";
import { PermanentError, RetryableError } from "../domain/errors.ts";

/** The escrow calls the service makes, who signs each, and the on-chain status each requires. */
const ACTIONS = {
  confirmPayment: { signer: "service", requires: "Locked" },
  cancel: { signer: "service", requires: "Active" },
  expireListing: { signer: "service", requires: "Active" },
  refundExpiredLock: { signer: "service", requires: "Locked" },
  resolveDispute: { signer: "arbiter", requires: "Disputed" },
} as const satisfies Record<string, { signer: "service" | "arbiter"; requires: EscrowStatus }>;

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
  status: "PENDING" | "SENT" | "MINED" | "REVERTED" | "SKIPPED";
  escrow_order_id: Hex;
  cep_hash: Hex | null;
}

export type SendOutcome = "MINED" | "REVERTED" | "SKIPPED";

/** A revert that may pass later (a deadline not reached yet): the job is retried. */
export class TransactionNotYetPossibleError extends RetryableError {}

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

/**
 * Sends each recorded transaction exactly once. The signed bytes and hash are stored before they are
 * broadcast; a retry after a crash looks the hash up on chain and rebroadcasts the same bytes, and
 * signs anew only when the chain shows that nonce consumed by another transaction (so the stored bytes
 * can never be mined). Before signing, the escrow's on-chain status is checked: an order the chain has
 * already moved (refunded by someone else, released, disputed) is SKIPPED, not sent.
 */
export function createTransactionSender(deps: { pool: Pool; gateway: EscrowGateway; logger: Logger; receiptTimeoutMs?: number }) {
  const { pool, gateway, logger } = deps;
  const accounts: Record<"service" | "arbiter", PrivateKeyAccount> = { service: gateway.service, arbiter: gateway.arbiter };

  const load = async (id: string): Promise<TransactionRow> => {
    const { rows } = await pool.query<TransactionRow>(
      `SELECT t.id, t.order_id, t.action, t.params, t.tx_hash, t.raw_tx, t.nonce, t.status, o.escrow_order_id, o.cep_hash
         FROM chain_transactions t JOIN orders o ON o.id = t.order_id WHERE t.id = $1`,
      [id],
    );
    if (!rows[0]) throw new PermanentError(`chain transaction ${id} does not exist`);
    return rows[0];
  };

  const finish = async (id: string, status: SendOutcome, error?: string): Promise<SendOutcome> => {
    await pool.query("UPDATE chain_transactions SET status = $2, error = $3, updated_at = now() WHERE id = $1", [id, status, error ?? null]);
    return status;
  };

  const calldata = (row: TransactionRow): Hex => {
    const id = row.escrow_order_id;
    switch (row.action) {
      case "confirmPayment":
        if (!row.cep_hash) throw new Error(`order ${row.order_id} has no verified CEP`);
        return encodeFunctionData({ abi: escrowAbi, functionName: "confirmPayment", args: [id, row.cep_hash] });
      case "resolveDispute": {
        const outcome = row.params.outcome;
        if (!outcome) throw new Error(`dispute resolution ${row.id} has no outcome`);
        return encodeFunctionData({ abi: escrowAbi, functionName: "resolveDispute", args: [id, disputeOutcome[outcome]] });
      }
      default:
        return encodeFunctionData({ abi: escrowAbi, functionName: row.action, args: [id] });
    }
  };

  const onChain = async (hash: Hash) => {
    const receipt = await gateway.publicClient.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt) return { receipt } as const;
    const pending = await gateway.publicClient.getTransaction({ hash }).catch(() => undefined);
    return { pending: pending !== undefined } as const;
  };

  const signAndBroadcast = async (row: TransactionRow, account: PrivateKeyAccount): Promise<Hash | "SKIPPED"> => {
    const status = await gateway.escrowStatus(row.escrow_order_id);
    if (status !== ACTIONS[row.action].requires) return "SKIPPED";
    const data = calldata(row);
    const to = gateway.settings.escrowAddress;
    try {
      // Against the pending block: on an idle chain the latest block's timestamp may predate a deadline
      // the next block will have passed.
      await gateway.publicClient.call({ account: account.address, to, data, blockTag: "pending" });
    } catch (error) {
      const revert = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
      throw new TransactionNotYetPossibleError(`${row.action} would revert: ${(revert as Error | undefined)?.message ?? (error as Error).message}`);
    }
    const wallet = gateway.walletClient(account);
    const nonce = await gateway.publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
    const request = await wallet.prepareTransactionRequest({ to, data, nonce, chain: gateway.chain });
    const raw = await wallet.signTransaction(request);
    const hash = keccak256(raw);
    await pool.query("UPDATE chain_transactions SET raw_tx = $2, tx_hash = $3, nonce = $4, status = 'SENT', updated_at = now() WHERE id = $1", [row.id, raw, hash, nonce]);
    await gateway.publicClient.sendRawTransaction({ serializedTransaction: raw });
    return hash;
  };

  return {
    async process(id: string): Promise<SendOutcome> {
      const first = await load(id);
      if (first.status === "MINED" || first.status === "REVERTED" || first.status === "SKIPPED") return first.status;
      const account = accounts[ACTIONS[first.action].signer];

      // One sender per signer at a time (src/chain/wallet-sends.ts), so nonces never collide across instances.
      const hash = await withSignerLock(pool, account.address, async (): Promise<Hash | "SKIPPED"> => {
        const row = await load(id);
        if (row.tx_hash && row.raw_tx) {
          const seen = await onChain(row.tx_hash);
          if ("receipt" in seen && seen.receipt) return row.tx_hash;
          if (seen.pending) return row.tx_hash;
          const mined = await gateway.publicClient.getTransactionCount({ address: account.address, blockTag: "latest" });
          if (BigInt(row.nonce ?? 0) >= BigInt(mined)) {
            // Never seen by this node (a crash before the broadcast, or a dropped transaction): the same bytes again.
            await gateway.publicClient.sendRawTransaction({ serializedTransaction: row.raw_tx }).catch((error: Error) => {
              logger.warn({ err: error, txHash: row.tx_hash }, "rebroadcast refused");
            });
            return row.tx_hash;
          }
          logger.warn({ txId: id, nonce: row.nonce }, "stored transaction can no longer be mined (nonce consumed); signing anew");
        }
        return signAndBroadcast(row, account);
      });
      if (hash === "SKIPPED") return finish(id, "SKIPPED", "the escrow is no longer in the state this action needs");
      const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash, timeout: deps.receiptTimeoutMs ?? 60_000 });
      logger.info({ txId: id, action: first.action, txHash: hash, status: receipt.status }, "escrow transaction mined");
      return finish(id, receipt.status === "success" ? "MINED" : "REVERTED", receipt.status === "success" ? undefined : "reverted on chain");
    },
  };
}

export type TransactionSender = ReturnType<typeof createTransactionSender>;
