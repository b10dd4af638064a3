// The trade paths `npm run chaos` drives, and what each must end in: the order's terminal status, the
// escrow's on-chain status, how many of each escrow event the chain holds for the order, and the
// webhook events the partner receives, in sequence order.

export const ESCROW_EVENTS = ["Deposited", "Locked", "Released", "Refunded", "DisputeOpened", "DisputeResolved"] as const;
export type EscrowEventName = (typeof ESCROW_EVENTS)[number];

export const PATH_NAMES = [
  "completed",
  "lock_expiry",
  "dispute_buyer",
  "dispute_seller",
  "dispute_no_fault_release",
  "dispute_no_fault_refund",
  "dispute_retry_complete",
  "dispute_retry_expire",
  "cancel_active",
  "cancel_pending",
  "deposit_expiry",
  "listing_expiry",
  "third_party_payment",
] as const;
export type PathName = (typeof PATH_NAMES)[number];

export type DisputeResolution = "BUYER" | "SELLER" | "NO_FAULT_RELEASE" | "NO_FAULT_REFUND" | "NO_FAULT_RETRY";

export interface PathSpec {
  status: "COMPLETED" | "REFUNDED" | "EXPIRED";
  /** escrowOrderStatus of getOrder: None, Released or Refunded. */
  chainStatus: "None" | "Released" | "Refunded";
  /** Refunded.reason (LOCK_EXPIRED 0, LISTING_EXPIRED 1, CANCELLED 2, DISPUTE 3). */
  refundReason?: number;
  /** Exactly this many of each escrow event for the order (absent: none). */
  events: Partial<Record<EscrowEventName, number>>;
  /** Webhook event types, sequence 1..n. */
  webhooks: string[];
  /** The dispute outcome the administrator asks for. */
  resolution?: DisputeResolution;
  /** Paid from a stranger's account (decisions 8): held, then released by the driver acting as the operator. */
  thirdPartyPayment?: true;
}

const OPENING = ["order.created", "order.deposit_confirmed", "order.locked"];
const DISPUTE_EVENTS = { Deposited: 1, Locked: 1, DisputeOpened: 1, DisputeResolved: 1 };

export const PATHS: Record<PathName, PathSpec> = {
  completed: {
    status: "COMPLETED",
    chainStatus: "Released",
    events: { Deposited: 1, Locked: 1, Released: 1 },
    webhooks: [...OPENING, "order.payment_verified", "order.completed"],
  },
  lock_expiry: {
    status: "REFUNDED",
    chainStatus: "Refunded",
    refundReason: 0,
    events: { Deposited: 1, Locked: 1, Refunded: 1 },
    webhooks: [...OPENING, "order.lock_expired", "order.refunded"],
  },
  dispute_buyer: {
    status: "COMPLETED",
    chainStatus: "Released",
    events: { ...DISPUTE_EVENTS, Released: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved"],
    resolution: "BUYER",
  },
  dispute_no_fault_release: {
    status: "COMPLETED",
    chainStatus: "Released",
    events: { ...DISPUTE_EVENTS, Released: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved"],
    resolution: "NO_FAULT_RELEASE",
  },
  dispute_seller: {
    status: "REFUNDED",
    chainStatus: "Refunded",
    refundReason: 3,
    events: { ...DISPUTE_EVENTS, Refunded: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved", "order.refunded"],
    resolution: "SELLER",
  },
  dispute_no_fault_refund: {
    status: "REFUNDED",
    chainStatus: "Refunded",
    refundReason: 3,
    events: { ...DISPUTE_EVENTS, Refunded: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved", "order.refunded"],
    resolution: "NO_FAULT_REFUND",
  },
  dispute_retry_complete: {
    status: "COMPLETED",
    chainStatus: "Released",
    events: { ...DISPUTE_EVENTS, Released: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved", "order.payment_verified", "order.completed"],
    resolution: "NO_FAULT_RETRY",
  },
  dispute_retry_expire: {
    status: "REFUNDED",
    chainStatus: "Refunded",
    refundReason: 0,
    events: { ...DISPUTE_EVENTS, Refunded: 1 },
    webhooks: [...OPENING, "order.disputed", "order.dispute_resolved", "order.lock_expired", "order.refunded"],
    resolution: "NO_FAULT_RETRY",
  },
  cancel_active: {
    status: "REFUNDED",
    chainStatus: "Refunded",
    refundReason: 2,
    events: { Deposited: 1, Refunded: 1 },
    webhooks: ["order.created", "order.deposit_confirmed", "order.refunded"],
  },
  cancel_pending: {
    status: "EXPIRED",
    chainStatus: "None",
    events: {},
    webhooks: ["order.created", "order.expired"],
  },
  deposit_expiry: {
    status: "EXPIRED",
    chainStatus: "None",
    events: {},
    webhooks: ["order.created", "order.expired"],
  },
  listing_expiry: {
    status: "EXPIRED",
    chainStatus: "Refunded",
    refundReason: 1,
    events: { Deposited: 1, Refunded: 1 },
    webhooks: ["order.created", "order.deposit_confirmed", "order.expired"],
  },
  third_party_payment: {
    status: "COMPLETED",
    chainStatus: "Released",
    events: { Deposited: 1, Locked: 1, Released: 1 },
    webhooks: [...OPENING, "order.payment_verified", "order.completed"],
    thirdPartyPayment: true,
  },
};

/**
 * When a step came too late for its window (the deposit deadline, the listing or the lock ran out
 * first), the timer's path is what the order must follow instead: the run records a deviation, not a
 * violation, and checks the order against that path. Keyed by the step that came too late.
 */
export function overtakenPath(path: PathName, step: "deposit" | "lock" | "pay" | "dispute"): PathName {
  if (step === "deposit") return "deposit_expiry";
  if (step === "lock") return "listing_expiry";
  if (step === "dispute") return "lock_expiry";
  // pay: after a NO_FAULT_RETRY the lock ran out a second time
  return path === "dispute_retry_complete" ? "dispute_retry_expire" : "lock_expiry";
}
