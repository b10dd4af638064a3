import { assign, enqueueActions, setup } from "xstate";

// The order state machine: it mirrors the spec's status chart (8 states, terminal states final) and is
// the only code that decides a status change. It is pure: `transition(orderMachine, snapshot, event)`
// returns the next snapshot and the effects to perform, as named actions with parameters. The actor
// store (store.ts) persists the snapshot and turns the effects into rows in the same transaction:
// timeline entries, outbox events, pg-boss timers and chain transactions to send.

export const ORDER_STATUSES = ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "PENDING_RELEASE", "COMPLETED", "EXPIRED", "REFUNDED", "DISPUTED"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const DISPUTE_OUTCOMES = ["BUYER", "SELLER", "NO_FAULT_RELEASE", "NO_FAULT_REFUND", "NO_FAULT_RETRY"] as const;
export type DisputeOutcome = (typeof DISPUTE_OUTCOMES)[number];
export type RefundReason = "LOCK_EXPIRED" | "LISTING_EXPIRED" | "CANCELLED" | "DISPUTE";
export type TimerKind = "DEPOSIT_TIMEOUT" | "LISTING_TIMEOUT" | "LOCK_TIMEOUT";
export type ChainAction = "confirmPayment" | "cancel" | "expireListing" | "refundExpiredLock" | "resolveDispute";
export type EventType =
  | "order.created"
  | "order.deposit_confirmed"
  | "order.locked"
  | "order.payment_verified"
  | "order.completed"
  | "order.refunded"
  | "order.lock_expired"
  | "order.disputed"
  | "order.dispute_resolved"
  | "order.expired";

export interface OrderContext {
  orderId: string;
  /** While PENDING_DEPOSIT the deposit deadline, while ACTIVE the listing expiry (decisions section 6). */
  expiresAt: string;
  escrowTxHash: string | null;
  sellerWallet: string | null;
  buyerWallet: string | null;
  lockedAt: string | null;
  lockExpiresAt: string | null;
  cepTrackingKey: string | null;
  cepHash: string | null;
  cepValidatedAt: string | null;
  /** Payment reports being verified (CEP fetched and checked by a job); absent in snapshots older than it. */
  verifyingPayments?: PaymentReport[];
  releaseTxHash: string | null;
  refundTxHash: string | null;
  completedAt: string | null;
  disputeOpenedBy: "BUYER" | "SELLER" | null;
  disputeOutcome: DisputeOutcome | null;
  /** The administrator's resolution, asked for while DISPUTED and not yet seen on chain (one per dispute). */
  resolutionRequest: { outcome: DisputeOutcome; note: string | null; requestedAt: string } | null;
  cancelRequested: boolean;
}

export interface OrderInput {
  orderId: string;
  expiresAt: string;
}

/** Events: chain facts arrive through the indexer; timers from pg-boss; requests from the API. */
export type OrderEvent =
  | { type: "DEPOSIT_CONFIRMED"; txHash: string; seller: string; listingExpiresAt: string; at: string }
  | { type: "LOCKED"; txHash: string; buyer: string; lockExpiresAt: string; at: string }
  | { type: "RELEASED"; txHash: string; at: string }
  | { type: "REFUNDED"; txHash: string; reason: RefundReason; at: string }
  | { type: "DISPUTE_OPENED"; txHash: string; openedBy: string; byBuyer: boolean; at: string }
  | { type: "DISPUTE_RESOLVED"; txHash: string; outcome: DisputeOutcome; newLockExpiresAt: string | null; at: string }
  | { type: "RESOLUTION_REQUESTED"; outcome: DisputeOutcome; note: string | null; at: string }
  | { type: "TIMER_FIRED"; timer: TimerKind; dueAt: string; at: string }
  | { type: "CANCEL"; at: string }
  | ({ type: "PAYMENT_VERIFIED"; cepHash: string; amountMxn: string; paidAt: string | null; at: string } & PaymentReportId)
  | ({ type: "PAYMENT_REJECTED"; reason: string; message: string; at: string } & PaymentReportId)
  | ({ type: "PAYMENT_REPORTED"; at: string } & PaymentReport);

/** Which SPEI payment a report names: the CEP portal finds a payment by these (and the amount). */
export interface PaymentReportId {
  cepTrackingKey: string;
  /** YYYY-MM-DD, the day the buyer paid. */
  operationDate: string;
  /** The sending bank's SPEI participant code (5 digits). */
  senderBankCode: string;
}

/** A buyer's payment report (src/payments/report.ts). */
export interface PaymentReport extends PaymentReportId {
  /** What the buyer says was paid, 2 decimals: the portal looks a payment up by its exact amount. */
  amountMxn: string;
}

/** Two reports name the same payment: tracking keys compare without letter case, like the portal's. */
export function samePayment(a: PaymentReportId, b: PaymentReportId): boolean {
  return a.cepTrackingKey.toUpperCase() === b.cepTrackingKey.toUpperCase() && a.operationDate === b.operationDate && a.senderBankCode === b.senderBankCode;
}

/** The report of this payment among those being verified, if any. */
export function paymentBeingVerified(context: Pick<OrderContext, "verifyingPayments">, payment: PaymentReportId): PaymentReport | undefined {
  return (context.verifyingPayments ?? []).find((report) => samePayment(report, payment));
}

/** The effects an order transition causes; the store writes each in the transition's transaction. */
export type OrderEffect =
  | { type: "timeline"; params: { event: string; data: Record<string, unknown> } }
  | { type: "notify"; params: { eventType: EventType; data: Record<string, unknown> } }
  | { type: "startTimer"; params: { timer: TimerKind; dueAt: string } }
  | { type: "sendTransaction"; params: { action: ChainAction; params?: { outcome: DisputeOutcome } } }
  | { type: "verifyPayment"; params: { cepTrackingKey: string; operationDate: string; senderBankCode: string } };

const timerMatches = (timer: TimerKind, due: (context: OrderContext) => string | null) => ({
  context,
  event,
}: {
  context: OrderContext;
  event: OrderEvent;
}) => event.type === "TIMER_FIRED" && event.timer === timer && event.dueAt === due(context);

export const orderMachine = setup({
  types: {} as { context: OrderContext; events: OrderEvent; input: OrderInput },
  actions: {
    // Effects are interpreted by the actor store from the transition result; they do nothing in memory.
    timeline: (_, _params: { event: string; data: Record<string, unknown> }) => undefined,
    notify: (_, _params: { eventType: EventType; data: Record<string, unknown> }) => undefined,
    startTimer: (_, _params: { timer: TimerKind; dueAt: string }) => undefined,
    sendTransaction: (_, _params: { action: ChainAction; params?: { outcome: DisputeOutcome } }) => undefined,
    verifyPayment: (_, _params: { cepTrackingKey: string; operationDate: string; senderBankCode: string }) => undefined,
    openDispute: enqueueActions(({ enqueue, event }) => {
      if (event.type !== "DISPUTE_OPENED") return;
      const openedBy = event.byBuyer ? ("BUYER" as const) : ("SELLER" as const);
      enqueue.assign({ disputeOpenedBy: openedBy, disputeOutcome: null, resolutionRequest: null });
      // Named actions declared beside this one cannot be typed from inside setup(); the shapes are OrderEffect's.
      const effects: OrderEffect[] = [
        { type: "timeline", params: { event: "DISPUTED", data: { openedBy, wallet: event.openedBy, txHash: event.txHash } } },
        { type: "notify", params: { eventType: "order.disputed", data: { openedBy, wallet: event.openedBy } } },
      ];
      for (const effect of effects) enqueue(effect as never);
    }),
  },
  guards: {
    // Payment proof: a report is verified once at a time, and only a verdict on a report being verified counts.
    paymentNotBeingVerified: ({ context, event }) => event.type === "PAYMENT_REPORTED" && !paymentBeingVerified(context, event),
    paymentVerifiedInLockWindow: ({ context, event }) =>
      event.type === "PAYMENT_VERIFIED" &&
      paymentBeingVerified(context, event) !== undefined &&
      context.lockExpiresAt !== null &&
      Date.parse(event.at) < Date.parse(context.lockExpiresAt),
    paymentRejectedWhileVerified: ({ context, event }) => event.type === "PAYMENT_REJECTED" && paymentBeingVerified(context, event) !== undefined,
    lockRefundedBeforeRelease: ({ event }) => event.type === "REFUNDED" && event.reason === "LOCK_EXPIRED",
    depositTimerDue: timerMatches("DEPOSIT_TIMEOUT", (context) => context.expiresAt),
    listingTimerDue: timerMatches("LISTING_TIMEOUT", (context) => context.expiresAt),
    lockTimerDue: timerMatches("LOCK_TIMEOUT", (context) => context.lockExpiresAt),
    // Named (not inline) so the definition served to the operator console labels each edge.
    cancelNotRequested: ({ context }) => !context.cancelRequested,
    refundedForListingExpiry: ({ event }) => event.type === "REFUNDED" && event.reason === "LISTING_EXPIRED",
    refundedForCancellation: ({ event }) => event.type === "REFUNDED" && event.reason === "CANCELLED",
    refundedForLockExpiry: ({ event }) => event.type === "REFUNDED" && event.reason === "LOCK_EXPIRED",
    retryOutcome: ({ event }) => event.type === "DISPUTE_RESOLVED" && event.outcome === "NO_FAULT_RETRY",
    releasingOutcome: ({ context }) => context.disputeOutcome === "BUYER" || context.disputeOutcome === "NO_FAULT_RELEASE",
    refundingOutcome: ({ context, event }) =>
      event.type === "REFUNDED" && event.reason === "DISPUTE" && (context.disputeOutcome === "SELLER" || context.disputeOutcome === "NO_FAULT_REFUND"),
    // One resolution per dispute: asking again while the first is on its way sends nothing.
    noResolutionPending: ({ context }) => !context.resolutionRequest,
  },
}).createMachine({
  id: "order",
  initial: "PENDING_DEPOSIT",
  context: ({ input }) => ({
    orderId: input.orderId,
    expiresAt: input.expiresAt,
    escrowTxHash: null,
    sellerWallet: null,
    buyerWallet: null,
    lockedAt: null,
    lockExpiresAt: null,
    cepTrackingKey: null,
    cepHash: null,
    cepValidatedAt: null,
    verifyingPayments: [],
    releaseTxHash: null,
    refundTxHash: null,
    completedAt: null,
    disputeOpenedBy: null,
    disputeOutcome: null,
    resolutionRequest: null,
    cancelRequested: false,
  }),
  states: {
    PENDING_DEPOSIT: {
      entry: [
        { type: "timeline", params: { event: "CREATED", data: {} } },
        { type: "notify", params: { eventType: "order.created", data: {} } },
        { type: "startTimer", params: ({ context }) => ({ timer: "DEPOSIT_TIMEOUT" as const, dueAt: context.expiresAt }) },
      ],
      on: {
        DEPOSIT_CONFIRMED: {
          target: "ACTIVE",
          actions: [
            assign(({ event }) => ({ escrowTxHash: event.txHash, sellerWallet: event.seller, expiresAt: event.listingExpiresAt })),
            { type: "timeline", params: ({ event }) => ({ event: "DEPOSIT_CONFIRMED", data: { txHash: event.txHash, sellerWallet: event.seller } }) },
            { type: "notify", params: ({ event }) => ({ eventType: "order.deposit_confirmed" as const, data: { escrowTxHash: event.txHash } }) },
            { type: "startTimer", params: ({ event }) => ({ timer: "LISTING_TIMEOUT" as const, dueAt: event.listingExpiresAt }) },
          ],
        },
        TIMER_FIRED: {
          guard: "depositTimerDue",
          target: "EXPIRED",
          actions: { type: "timeline", params: { event: "EXPIRED", data: { reason: "DEPOSIT_TIMEOUT" } } },
        },
        CANCEL: {
          target: "EXPIRED",
          actions: { type: "timeline", params: { event: "EXPIRED", data: { reason: "CANCELLED" } } },
        },
      },
    },
    ACTIVE: {
      on: {
        LOCKED: {
          target: "LOCKED",
          actions: [
            assign(({ event }) => ({ buyerWallet: event.buyer, lockedAt: event.at, lockExpiresAt: event.lockExpiresAt })),
            { type: "timeline", params: ({ event }) => ({ event: "LOCKED", data: { txHash: event.txHash, buyerWallet: event.buyer, lockExpiresAt: event.lockExpiresAt } }) },
            { type: "notify", params: ({ event }) => ({ eventType: "order.locked" as const, data: { buyerWallet: event.buyer, lockExpiresAt: event.lockExpiresAt } }) },
            { type: "startTimer", params: ({ event }) => ({ timer: "LOCK_TIMEOUT" as const, dueAt: event.lockExpiresAt }) },
          ],
        },
        // The listing ran out: the escrow is refunded on chain; the order ends EXPIRED when that is seen.
        TIMER_FIRED: {
          guard: "listingTimerDue",
          actions: [
            { type: "timeline", params: { event: "LISTING_EXPIRY_REQUESTED", data: {} } },
            { type: "sendTransaction", params: { action: "expireListing" as const } },
          ],
        },
        CANCEL: {
          guard: "cancelNotRequested",
          actions: [
            assign({ cancelRequested: true }),
            { type: "timeline", params: { event: "CANCELLATION_REQUESTED", data: {} } },
            { type: "sendTransaction", params: { action: "cancel" as const } },
          ],
        },
        REFUNDED: [
          {
            guard: "refundedForListingExpiry",
            target: "EXPIRED",
            actions: [
              assign(({ event }) => ({ refundTxHash: event.txHash })),
              { type: "timeline", params: ({ event }) => ({ event: "EXPIRED", data: { reason: "LISTING_TIMEOUT", refundTxHash: event.txHash } }) },
            ],
          },
          {
            guard: "refundedForCancellation",
            target: "REFUNDED",
            actions: [
              assign(({ event }) => ({ refundTxHash: event.txHash })),
              { type: "timeline", params: ({ event }) => ({ event: "REFUNDED", data: { reason: "CANCELLED", refundTxHash: event.txHash } }) },
              { type: "notify", params: ({ event }) => ({ eventType: "order.refunded" as const, data: { refundTxHash: event.txHash, reason: "CANCELLED" } }) },
            ],
          },
        ],
      },
    },
    LOCKED: {
      // Reports made before a dispute are not verified after it: the buyer reports again.
      entry: assign({ verifyingPayments: [] }),
      on: {
        // The buyer's SPEI report: the CEP is fetched and checked by a job, which answers with
        // PAYMENT_VERIFIED or PAYMENT_REJECTED. The same payment reported again while it is being
        // verified changes nothing (no second job).
        PAYMENT_REPORTED: {
          guard: "paymentNotBeingVerified",
          actions: [
            assign(({ context, event }) => ({
              verifyingPayments: [
                ...(context.verifyingPayments ?? []),
                { cepTrackingKey: event.cepTrackingKey, operationDate: event.operationDate, senderBankCode: event.senderBankCode, amountMxn: event.amountMxn },
              ],
            })),
            {
              type: "timeline",
              params: ({ event }) => ({
                event: "PAYMENT_REPORTED",
                data: { cepTrackingKey: event.cepTrackingKey, operationDate: event.operationDate, senderBankCode: event.senderBankCode, amountMxn: event.amountMxn },
              }),
            },
            { type: "verifyPayment", params: ({ event }) => ({ cepTrackingKey: event.cepTrackingKey, operationDate: event.operationDate, senderBankCode: event.senderBankCode }) },
          ],
        },
        // Only a report being verified, and only before the lock expires: after it the lock-expiry refund
        // may already be on its way, and the release must never race it.
        PAYMENT_VERIFIED: {
          guard: "paymentVerifiedInLockWindow",
          target: "PENDING_RELEASE",
          actions: [
            assign(({ event }) => ({ cepTrackingKey: event.cepTrackingKey, cepHash: event.cepHash, cepValidatedAt: event.at, verifyingPayments: [] })),
            {
              type: "timeline",
              params: ({ event }) => ({ event: "PAYMENT_VERIFIED", data: { cepTrackingKey: event.cepTrackingKey, amountMxn: event.amountMxn, paidAt: event.paidAt } }),
            },
            { type: "notify", params: ({ event }) => ({ eventType: "order.payment_verified" as const, data: { cepTrackingKey: event.cepTrackingKey, cepValidatedAt: event.at } }) },
            { type: "sendTransaction", params: { action: "confirmPayment" as const } },
          ],
        },
        PAYMENT_REJECTED: {
          guard: "paymentRejectedWhileVerified",
          actions: [
            assign(({ context, event }) => ({ verifyingPayments: (context.verifyingPayments ?? []).filter((report) => !samePayment(report, event)) })),
            {
              type: "timeline",
              params: ({ event }) => ({
                event: "PAYMENT_REJECTED",
                data: { cepTrackingKey: event.cepTrackingKey, operationDate: event.operationDate, senderBankCode: event.senderBankCode, reason: event.reason, message: event.message },
              }),
            },
          ],
        },
        TIMER_FIRED: {
          guard: "lockTimerDue",
          actions: [
            { type: "timeline", params: { event: "LOCK_EXPIRY_REFUND_REQUESTED", data: {} } },
            { type: "sendTransaction", params: { action: "refundExpiredLock" as const } },
          ],
        },
        REFUNDED: {
          guard: "refundedForLockExpiry",
          target: "REFUNDED",
          actions: [
            assign(({ event }) => ({ refundTxHash: event.txHash })),
            { type: "timeline", params: ({ event }) => ({ event: "LOCK_EXPIRED", data: { refundTxHash: event.txHash } }) },
            { type: "notify", params: { eventType: "order.lock_expired" as const, data: {} } },
            { type: "timeline", params: ({ event }) => ({ event: "REFUNDED", data: { reason: "LOCK_EXPIRED", refundTxHash: event.txHash } }) },
            { type: "notify", params: ({ event }) => ({ eventType: "order.refunded" as const, data: { refundTxHash: event.txHash, reason: "LOCK_EXPIRED" } }) },
          ],
        },
        DISPUTE_OPENED: { target: "DISPUTED", actions: "openDispute" },
      },
    },
    PENDING_RELEASE: {
      on: {
        RELEASED: {
          target: "COMPLETED",
          actions: [
            assign(({ event }) => ({ releaseTxHash: event.txHash, completedAt: event.at })),
            { type: "timeline", params: ({ event }) => ({ event: "COMPLETED", data: { releaseTxHash: event.txHash } }) },
            { type: "notify", params: ({ event }) => ({ eventType: "order.completed" as const, data: { completedAt: event.at, releaseTxHash: event.txHash } }) },
          ],
        },
        // A dispute opened on chain before the release transaction was mined: the chain refused the
        // release, so the order follows the chain into DISPUTED.
        DISPUTE_OPENED: { target: "DISPUTED", actions: "openDispute" },
        // Anyone may refund an expired lock: a refund mined before the release (verified just before
        // expiry) wins on chain, the release is skipped, and the order follows the chain.
        REFUNDED: {
          guard: "lockRefundedBeforeRelease",
          target: "REFUNDED",
          actions: [
            assign(({ event }) => ({ refundTxHash: event.txHash })),
            { type: "timeline", params: ({ event }) => ({ event: "LOCK_EXPIRED", data: { refundTxHash: event.txHash, releaseSkipped: true } }) },
            { type: "notify", params: { eventType: "order.lock_expired" as const, data: {} } },
            { type: "timeline", params: ({ event }) => ({ event: "REFUNDED", data: { reason: "LOCK_EXPIRED", refundTxHash: event.txHash } }) },
            { type: "notify", params: ({ event }) => ({ eventType: "order.refunded" as const, data: { refundTxHash: event.txHash, reason: "LOCK_EXPIRED" } }) },
          ],
        },
      },
    },
    DISPUTED: {
      on: {
        // The administrator's decision (POST /admin/v1/orders/:id/resolve): recorded, and the arbiter's
        // resolveDispute transaction requested once; the order then follows the chain (DISPUTE_RESOLVED).
        RESOLUTION_REQUESTED: {
          guard: "noResolutionPending",
          actions: [
            assign(({ event }) => ({ resolutionRequest: { outcome: event.outcome, note: event.note, requestedAt: event.at } })),
            { type: "timeline", params: ({ event }) => ({ event: "DISPUTE_RESOLUTION_REQUESTED", data: { outcome: event.outcome, note: event.note } }) },
            { type: "sendTransaction", params: ({ event }) => ({ action: "resolveDispute" as const, params: { outcome: event.outcome } }) },
          ],
        },
        DISPUTE_RESOLVED: [
          {
            guard: "retryOutcome",
            target: "LOCKED",
            actions: [
              assign(({ event }) => ({ disputeOutcome: event.outcome, lockExpiresAt: event.newLockExpiresAt, resolutionRequest: null })),
              { type: "timeline", params: ({ event }) => ({ event: "DISPUTE_RESOLVED", data: { outcome: event.outcome, txHash: event.txHash, lockExpiresAt: event.newLockExpiresAt } }) },
              {
                type: "notify",
                params: ({ context, event }) => ({
                  eventType: "order.dispute_resolved" as const,
                  data: { outcome: event.outcome, openedBy: context.disputeOpenedBy, lockExpiresAt: event.newLockExpiresAt },
                }),
              },
              { type: "startTimer", params: ({ event }) => ({ timer: "LOCK_TIMEOUT" as const, dueAt: event.newLockExpiresAt ?? event.at }) },
            ],
          },
          {
            // Release and refund outcomes: the same transaction's Released/Refunded event ends the order.
            actions: [
              assign(({ event }) => ({ disputeOutcome: event.outcome })),
              { type: "timeline", params: ({ event }) => ({ event: "DISPUTE_RESOLVED", data: { outcome: event.outcome, txHash: event.txHash } }) },
            ],
          },
        ],
        RELEASED: {
          guard: "releasingOutcome",
          target: "COMPLETED",
          actions: [
            assign(({ event }) => ({ releaseTxHash: event.txHash, completedAt: event.at })),
            { type: "timeline", params: ({ event }) => ({ event: "COMPLETED", data: { releaseTxHash: event.txHash } }) },
            {
              type: "notify",
              params: ({ context, event }) => ({
                eventType: "order.dispute_resolved" as const,
                data: { outcome: context.disputeOutcome, openedBy: context.disputeOpenedBy, completedAt: event.at, releaseTxHash: event.txHash },
              }),
            },
          ],
        },
        REFUNDED: {
          guard: "refundingOutcome",
          target: "REFUNDED",
          actions: [
            assign(({ event }) => ({ refundTxHash: event.txHash })),
            { type: "timeline", params: ({ event }) => ({ event: "REFUNDED", data: { reason: "DISPUTE", refundTxHash: event.txHash } }) },
            {
              type: "notify",
              params: ({ context, event }) => ({
                eventType: "order.dispute_resolved" as const,
                data: { outcome: context.disputeOutcome, openedBy: context.disputeOpenedBy, refundTxHash: event.txHash },
              }),
            },
            { type: "notify", params: ({ event }) => ({ eventType: "order.refunded" as const, data: { refundTxHash: event.txHash, reason: "DISPUTE" } }) },
          ],
        },
      },
    },
    COMPLETED: { type: "final" },
    EXPIRED: {
      type: "final",
      entry: { type: "notify", params: { eventType: "order.expired", data: {} } },
    },
    REFUNDED: { type: "final" },
  },
});

export type OrderMachine = typeof orderMachine;
