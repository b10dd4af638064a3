// The one owner of an order's deposit terms (the EIP-712 `OrderTerms` the service signs and the seller's
// wallet submits with its deposit). They are built and signed once, when the order is created, and kept
// with it (orders.deposit_terms); the order view, the admin view and the sandbox deposit read them from
// here. Nothing rebuilds them from the configuration of the day: an order created before a change of
// LISTING_TIMEOUT_SECONDS or LOCK_WINDOW_SECONDS keeps the terms its signature covers.
import { getAddress, type Address, type Hex } from "viem";
import type { OrderTerms } from "../chain/escrow-gateway.ts";

/** The terms as kept and shown (`deposit.terms`): uint256/uint64 as decimal strings. */
export interface SignedTerms {
  orderId: string;
  token: string;
  amount: string;
  feeBps: number;
  feeRecipient: string;
  treasuryShareBps: number;
  depositDeadline: string;
  listingWindow: string;
  lockWindow: string;
}

/** The terms of a new order, from what creation decided. */
export function newOrderTerms(input: {
  escrowOrderId: Hex;
  token: Address;
  amountRaw: bigint;
  feeBps: number;
  feeRecipient: Address;
  treasuryShareBps: number;
  depositDeadline: Date;
  listingWindowSeconds: number;
  lockWindowSeconds: number;
}): OrderTerms {
  return {
    orderId: input.escrowOrderId,
    token: input.token,
    amount: input.amountRaw,
    feeBps: input.feeBps,
    feeRecipient: input.feeRecipient,
    treasuryShareBps: input.treasuryShareBps,
    depositDeadline: BigInt(Math.floor(input.depositDeadline.getTime() / 1000)),
    listingWindow: BigInt(input.listingWindowSeconds),
    lockWindow: BigInt(input.lockWindowSeconds),
  };
}

/** What is written to orders.deposit_terms (and shown), in the signed struct's field order. */
export function keptTerms(terms: OrderTerms): SignedTerms {
  return {
    orderId: terms.orderId,
    token: terms.token,
    amount: terms.amount.toString(),
    feeBps: terms.feeBps,
    feeRecipient: terms.feeRecipient,
    treasuryShareBps: terms.treasuryShareBps,
    depositDeadline: terms.depositDeadline.toString(),
    listingWindow: terms.listingWindow.toString(),
    lockWindow: terms.lockWindow.toString(),
  };
}

/** The fields of an order row the terms are read from. */
export interface TermsRow {
  deposit_terms: SignedTerms | null;
  escrow_order_id: string;
  amount_raw: string;
  fee_bps: number;
  fee_recipient_address: string;
  treasury_share_bps: number;
  deposit_deadline: Date;
}

/**
 * Only for orders written before the terms were kept (deposit_terms NULL: created before migration
 * 1763800000301, or inserted by the benchmark's bulk loader): what was then rebuilt on every read.
 */
export interface UnkeptTermsFallback {
  tokenAddress: string;
  listingWindowSeconds: number;
  lockWindowSeconds: number;
}

/** The order's signed terms, as shown (`deposit.terms`). */
export function signedTermsOf(row: TermsRow, fallback: UnkeptTermsFallback): SignedTerms {
  const kept = row.deposit_terms;
  if (kept) {
    // Re-listed in the struct's order: the JSONB column does not keep key order.
    return {
      orderId: kept.orderId,
      token: kept.token,
      amount: String(kept.amount),
      feeBps: Number(kept.feeBps),
      feeRecipient: kept.feeRecipient,
      treasuryShareBps: Number(kept.treasuryShareBps),
      depositDeadline: String(kept.depositDeadline),
      listingWindow: String(kept.listingWindow),
      lockWindow: String(kept.lockWindow),
    };
  }
  return {
    orderId: row.escrow_order_id,
    token: fallback.tokenAddress,
    amount: row.amount_raw,
    feeBps: row.fee_bps,
    feeRecipient: row.fee_recipient_address,
    treasuryShareBps: row.treasury_share_bps,
    depositDeadline: String(Math.floor(row.deposit_deadline.getTime() / 1000)),
    listingWindow: String(fallback.listingWindowSeconds),
    lockWindow: String(fallback.lockWindowSeconds),
  };
}

/** Signed terms as the contract takes them (`deposit(terms, signature)`). */
export function contractTerms(terms: SignedTerms): OrderTerms {
  return {
    orderId: terms.orderId as Hex,
    token: getAddress(terms.token),
    amount: BigInt(terms.amount),
    feeBps: Number(terms.feeBps),
    feeRecipient: getAddress(terms.feeRecipient),
    treasuryShareBps: Number(terms.treasuryShareBps),
    depositDeadline: BigInt(terms.depositDeadline),
    listingWindow: BigInt(terms.listingWindow),
    lockWindow: BigInt(terms.lockWindow),
  };
}
