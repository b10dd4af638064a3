import type { TimerKind } from "../orders/machine.ts";
import type { PaymentReportId } from "../orders/machine.ts";
import type { PaymentVerificationAttempt } from "../payments/verification.ts";
import { v5 as uuidv5 } from "uuid";
import type { PgBoss } from "./boss.ts";

// Every pg-boss queue of the service: its name, the payload of its jobs and its options. The producers
// (order effect ports, the outbox) and the workers (src/workers/) both name queues from here.

/** An order's timer, due at `dueAt`: fires into the order actor. */
export const ORDER_TIMER_QUEUE = "orders.timer";
export interface TimerJob {
  orderId: string;
  timer: TimerKind;
  dueAt: string;
}

/**
 * The job id of an order's timer, derived from the timer itself (order, kind, due time): the transition
 * that makes a timer moot deletes it by this id, with no lookup, and a timer started twice (a retried
 * transition) is one job. Re-checks a worker schedules for a due timer get ids of their own.
 */
export function timerJobId(timer: TimerJob): string {
  return uuidv5(`${timer.orderId}/${timer.timer}/${timer.dueAt}`, TIMER_ID_NAMESPACE);
}
const TIMER_ID_NAMESPACE = "6f1d8a52-3c57-4f0e-9b7a-2d4c8e1f0a93";

/** An escrow transaction recorded once (chain_transactions), sent by the transaction sender. */
export const CHAIN_SEND_QUEUE = "chain.send";
export interface ChainSendJob {
  transactionId: string;
}
/** A broadcast transaction looked at again until its receipt settles it (same payload as chain.send). */
export const CHAIN_CONFIRM_QUEUE = "chain.confirm";

/**
 * The verification of one order's reported SPEI payments (decisions 19: fair across orders). The queue's
 * policy is `exclusive` with the order id as singleton key: an order has at most one job queued or
 * active, whatever the number of its reports, and each job makes one CEP portal attempt for one of them
 * then queues the order's next job behind every other order's (src/workers/payment-verification.ts).
 */
export const PAYMENT_VERIFY_QUEUE = "payments.verify";
export const PAYMENT_VERIFY_POLICY = "exclusive";
/** Where one of the order's reports stands between attempts (absent: not tried yet, due now). */
export interface ReportProgress extends PaymentReportId {
  /** The next attempt's number (1 for the first). */
  attempt: number;
  notFound?: number;
  lastAnswer?: string;
  /** When the next attempt is due (the verifier's retry delay). */
  dueAt: string;
}
/** The order's job, as the verifyPayment effect enqueues it (no progress yet) and as each job queues the next. */
export interface PaymentVerificationJob {
  orderId: string;
  progress?: ReportProgress[];
}
export type { PaymentVerificationAttempt };

/** One job per webhook delivery attempt. */
export const DELIVERY_QUEUE = "webhooks.deliver";
export interface DeliveryJob {
  deliveryId: string;
  /** Attempt series (1, then +1 per operator redelivery): a job of an older series does nothing. */
  series: number;
  /** The 1-based attempt this job makes: it does nothing unless the delivery has made attempt - 1. */
  attempt: number;
}
/** Periodic backstop: re-enqueues pending deliveries whose job went missing (no payload). */
export const SWEEP_QUEUE = "webhooks.sweep";

/** Periodic clean-ups (no payload), by the maintenance task that works each. */
export const MAINTENANCE_QUEUES = {
  pruneRateLimitWindows: { name: "maintenance.prune-rate-limits", cron: "* * * * *" },
  pruneIdempotencyKeys: { name: "maintenance.prune-idempotency-keys", cron: "17 * * * *" },
  pruneDashboard: { name: "maintenance.prune-dashboard", cron: "23 * * * *" },
  pruneMarketSignIns: { name: "maintenance.prune-market-sign-ins", cron: "29 * * * *" },
} as const;

// notify: a job written wakes the workers at once instead of on their next poll (jobs/boss.ts).
// heartbeatSeconds: a live worker refreshes each job it holds every 5 s; a job whose worker died (SIGKILL,
// lost machine) is given back by the supervisor once 10 s pass without a beat (within ~20 s with its
// 10 s sweep), not only when its expiry passes. expireInSeconds still bounds a live handler that hangs.
// Found by the two-instance kill test: a confirmation held by the killed instance stayed SENT for its
// whole 60 s expiry after every order had ended.
const HEARTBEAT_SECONDS = 10;

/**
 * Work options of a queue that holds jobs deferred to later (timers, retries with backoff): fetch the jobs
 * that fell due first, through JOB_DUE_INDEX (src/jobs/boss.ts, patches/pg-boss+12.38.0.patch), so a fetch
 * costs the due jobs, not every job the queue holds. Priorities, which no queue here sets, are not honoured.
 */
export const DUE_FIRST = { orderByStartAfter: true } as const;

/**
 * Work options of a worker that takes one job at a time (an order's timer, a payment's verification), due
 * first: after a job it fetches again at once, the queue may hold more, and sleeps its polling interval
 * only after a fetch that found nothing (`burstWhenBatchFull` at batchSize 1, patches/pg-boss+12.38.0.patch).
 * Sleeping after every job, a worker took jobs already waiting one a polling interval unless a new job's
 * NOTIFY woke it, and timers falling due together announce nothing. Polls every half second (pg-boss's
 * default is 2 s): a step of a trade waits at most that long for a worker.
 */
export const ONE_JOB_AT_A_TIME = { ...DUE_FIRST, batchSize: 1, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 } as const;

export const ORDER_QUEUE_OPTIONS = {
  // A timer is one short transaction: a worker killed while holding one (SIGKILL, crash) gives it back
  // within a minute. Without expireInSeconds pg-boss waits its default 15 minutes before retrying, so
  // a kill at the wrong moment made an expiry or a lock refund 15 minutes late (found by npm run chaos).
  [ORDER_TIMER_QUEUE]: { retryLimit: 50, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS, notify: true },
  // A transaction that would revert now (a deadline the chain has not reached) is retried with backoff.
  // One attempt signs and broadcasts without waiting for the receipt (seconds at most): a worker killed
  // mid-attempt is retried within half a minute.
  [CHAIN_SEND_QUEUE]: { retryLimit: 200, retryDelay: 2, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 30, heartbeatSeconds: HEARTBEAT_SECONDS, notify: true },
  // Each attempt is one receipt lookup (and a rebroadcast when the node lost the transaction). Not
  // mined yet is a retry: every second at first, then at most every 30 s.
  [CHAIN_CONFIRM_QUEUE]: { retryLimit: 100_000, retryDelay: 1, retryBackoff: true, retryDelayMax: 30, expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS },
  // One attempt is one portal lookup (seconds): a worker killed mid-attempt is retried within a minute.
  [PAYMENT_VERIFY_QUEUE]: { policy: PAYMENT_VERIFY_POLICY, retryLimit: 1000, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS, notify: true },
};

/**
 * pg-boss settings of the delivery queue. A job whose worker died (SIGKILL, lost machine) stays active
 * until its heartbeat is missed (or, for a live handler that hangs, `expireInSeconds` pass), then pg-boss's
 * supervisor puts it back for retry, so the interrupted attempt is made again under the same delivery id. pg-boss's own retries are only for such crashes and
 * for infrastructure errors; the webhook retry schedule is ours (WEBHOOK_RETRY_DELAYS_SECONDS).
 */
export function deliveryQueueOptions(timeoutMs: number) {
  return {
    expireInSeconds: Math.ceil(timeoutMs / 1000) + 10,
    retryLimit: 20,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 60,
    heartbeatSeconds: HEARTBEAT_SECONDS,
    deleteAfterSeconds: 7 * 86400,
    // A delivery written wakes the workers at once (jobs/boss.ts); retries still wait for their time.
    notify: true,
  };
}

/** Creates a queue, or applies the current options to the existing one (createQueue leaves it as it was). */
export async function ensureQueue(boss: PgBoss, name: string, options: Parameters<PgBoss["createQueue"]>[1] = {}): Promise<void> {
  await boss.createQueue(name, options);
  // A queue's policy is fixed when it is created; the other options can change.
  const { policy: _policy, ...changeable } = options ?? {};
  if (Object.keys(changeable).length > 0) await boss.updateQueue(name, changeable);
}

export async function createOrderQueues(boss: PgBoss): Promise<void> {
  // pg-boss cannot change a queue's policy: a verification queue made before it was per order (standard
  // policy, one job per report attempt) is dropped and made again. Its jobs go with it; the verification
  // worker queues a job for every order with reports still being verified when it starts.
  const verify = await boss.getQueue(PAYMENT_VERIFY_QUEUE);
  if (verify && verify.policy !== PAYMENT_VERIFY_POLICY) await boss.deleteQueue(PAYMENT_VERIFY_QUEUE);
  for (const [name, options] of Object.entries(ORDER_QUEUE_OPTIONS)) await ensureQueue(boss, name, options);
}

export async function ensureDeliveryQueues(boss: PgBoss, timeoutMs: number): Promise<void> {
  // The current WEBHOOK_TIMEOUT_MS applies to an existing queue too.
  await ensureQueue(boss, DELIVERY_QUEUE, deliveryQueueOptions(timeoutMs));
  await ensureQueue(boss, SWEEP_QUEUE);
}
