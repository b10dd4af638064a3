import { DEPOSIT_HELD } from "../orders/queries.ts";
import { getAddress, type Address, type Hex } from "viem";
import { lockPermitDeadline, type LockPermit } from "../chain/escrow-gateway.ts";
import { withTransaction, type Pool } from "../db/pool.ts";
import { KycRequiredError, NotFoundError, UserSanctionedError } from "../domain/errors.ts";
import { holdsKycLevel } from "../domain/kyc.ts";
import type { SanctionsList } from "../domain/sanctions.ts";
import { buyerStanding, ensureBuyer, isSandboxWallet, normaliseWallet, requiredBuyerLevel, type BuyerPolicy } from "./buyers.ts";
import { BuyerSuspendedError, LockLimitReachedError, OrderNotAvailableError } from "./errors.ts";

// Lock permits (decisions 17): the service's EIP-712 admission of one buyer wallet to lock one order,
// signed with the escrow gateway's signLockPermit (the LockPermit type of src/chain/escrow-abi.ts). The
// market route and the sandbox lock helper both get their permits here.

export interface PermitIssuerDeps {
  pool: Pool;
  policy: BuyerPolicy;
  sanctions: Pick<SanctionsList, "isSanctioned">;
  chain: { chainId: number; escrowAddress: Address; signLockPermit(permit: LockPermit): Promise<Hex> };
}

export interface IssuedPermit {
  permit: { orderId: Hex; buyer: Address; deadline: number };
  signature: Hex;
  escrowAddress: Address;
  chainId: number;
  /** The permit as the escrow's `lock` takes it. */
  forContract: LockPermit;
}

export interface PermitOptions {
  /**
   * The partner sandbox lock helper: it drives sandbox wallets into states, the sanctioned sandbox wallet
   * included, so the lock-time screening of decisions 19 can be tried; everything else is checked alike.
   */
  sandboxHelper?: boolean;
  now?: Date;
}

const ESCROW_ORDER_ID = /^0x[0-9a-fA-F]{64}$/;

/**
 * Issues a permit for `wallet` to lock the order `escrowOrderId`. Refusals, in this order: NOT_FOUND,
 * ORDER_NOT_AVAILABLE (not ACTIVE, listing expired, the buyer is the seller), BUYER_SUSPENDED,
 * USER_SANCTIONED, KYC_REQUIRED (BASIC; FULL once the month, counting completed trades, open locks and
 * permits, and this order, reaches 50,000 MXN), LOCK_LIMIT_REACHED.
 * Counting and recording happen under a per-buyer lock, so concurrent requests cannot pass the limit
 * together; an unexpired permit for another ACTIVE order counts as a lock.
 */
export function createPermitIssuer(deps: PermitIssuerDeps) {
  const { pool, policy } = deps;
  return async function issueLockPermit(wallet: string, escrowOrderId: string, options: PermitOptions = {}): Promise<IssuedPermit> {
    const now = options.now ?? new Date();
    const buyerWallet = normaliseWallet(wallet);
    if (!ESCROW_ORDER_ID.test(escrowOrderId)) throw new NotFoundError(`No order ${escrowOrderId}`);
    return withTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ id: string; status: string; expires_at: Date; seller_wallet: string | null; total_mxn: string; deposit_held: boolean }>(
        `SELECT id, status, expires_at, seller_wallet, total_mxn, ${DEPOSIT_HELD} AS deposit_held FROM orders WHERE escrow_order_id = $1`,
        [escrowOrderId.toLowerCase()],
      );
      const order = rows[0];
      if (!order) throw new NotFoundError(`No order ${escrowOrderId}`);
      if (order.status !== "ACTIVE") throw new OrderNotAvailableError(`The order is ${order.status}; only ACTIVE orders can be locked`);
      if (order.expires_at.getTime() <= now.getTime()) throw new OrderNotAvailableError("The order's listing has expired");
      if (order.deposit_held) throw new OrderNotAvailableError("The order is held for review and not listed");
      if (order.seller_wallet?.toLowerCase() === buyerWallet) throw new OrderNotAvailableError("A seller cannot lock its own order");

      await tx.query("SELECT pg_advisory_xact_lock(hashtext('buyer:' || $1))", [buyerWallet]);
      const buyer = await ensureBuyer(tx, policy, buyerWallet);
      const exempt = isSandboxWallet(policy, buyerWallet);
      const standing = await buyerStanding(tx, policy, buyer, now);
      if (standing.status === "SUSPENDED") {
        throw new BuyerSuspendedError(`The buyer is suspended until ${standing.suspendedUntil!.toISOString()} (${standing.expiredLocks30d} locks expired unpaid in 30 days)`);
      }
      if (!options.sandboxHelper && deps.sanctions.isSanctioned(buyerWallet)) throw new UserSanctionedError("The wallet is on a sanctions list");
      // Sanctions cut both ways (decisions 19): a KYC screening match stops the buyer as a listed wallet does.
      if (buyer.is_sanctioned || buyer.is_pep) throw new UserSanctionedError("The buyer's KYC screening found a sanctions or PEP match; an operator must review it");
      // Other ACTIVE orders this buyer holds an unexpired permit for: a permit is a right to lock, so each
      // counts as a lock, for the limit and for the month's pesos alike.
      const { rows: pending } = await tx.query<{ n: string; mxn: string }>(
        `SELECT count(*) AS n, coalesce(sum(o.total_mxn), 0) AS mxn FROM orders o
          WHERE o.status = 'ACTIVE' AND o.id <> $3
            AND EXISTS (SELECT 1 FROM lock_permits p WHERE p.order_id = o.id AND p.wallet = $1 AND p.deadline > $2)`,
        [buyerWallet, now, order.id],
      );
      const required = requiredBuyerLevel(standing.monthlyVolumeMxn, standing.openLocksMxn, pending[0]!.mxn, order.total_mxn);
      if (!exempt && !holdsKycLevel(buyer.kyc_tier, required)) {
        throw new KycRequiredError(
          `Locking needs ${required} KYC (POST /market/v1/me/kyc); the buyer holds ${buyer.kyc_tier === "NONE" ? "none" : buyer.kyc_tier}` +
            (required === "FULL" ? ": its month (completed trades, open locks and this order) reaches 50,000 MXN" : ""),
        );
      }
      if (!exempt) {
        const held = standing.openLocks + Number(pending[0]!.n);
        if (held >= policy.maxOpenLocks) {
          throw new LockLimitReachedError(`The buyer holds ${held} locks or unexpired lock permits; at most ${policy.maxOpenLocks} at once`);
        }
      }

      const forContract: LockPermit = { orderId: escrowOrderId.toLowerCase() as Hex, buyer: getAddress(buyerWallet), deadline: lockPermitDeadline(now) };
      const signature = await deps.chain.signLockPermit(forContract);
      await tx.query("INSERT INTO lock_permits (order_id, wallet, deadline) VALUES ($1, $2, $3)", [order.id, buyerWallet, new Date(Number(forContract.deadline) * 1000)]);
      return {
        permit: { orderId: forContract.orderId, buyer: forContract.buyer, deadline: Number(forContract.deadline) },
        signature,
        escrowAddress: deps.chain.escrowAddress,
        chainId: deps.chain.chainId,
        forContract,
      };
    });
  };
}

export type PermitIssuer = ReturnType<typeof createPermitIssuer>;
