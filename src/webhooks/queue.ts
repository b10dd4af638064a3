import type { Queryable } from "../db/pool.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";

/** One job per delivery attempt. */
export const DELIVERY_QUEUE = "webhooks.deliver";
/** Periodic backstop: re-enqueues pending deliveries whose job went missing. */
export const SWEEP_QUEUE = "webhooks.sweep";

export interface DeliveryJob {
  deliveryId: string;
  /** Attempt series (1, then +1 per operator redelivery): a job of an older series does nothing. */
  series: number;
  /** The 1-based attempt this job makes: it does nothing unless the delivery has made attempt - 1. */
  attempt: number;
}

/**
 * pg-boss settings of the delivery queue. A job whose worker died (SIGKILL, lost machine) stays active
 * until `expireInSeconds` pass, then pg-boss's supervisor puts it back for retry, so the interrupted
 * attempt is made again under the same delivery id. pg-boss's own retries are only for such crashes and
 * for infrastructure errors; the webhook retry schedule is ours (WEBHOOK_RETRY_DELAYS_SECONDS).
 */
export function deliveryQueueOptions(timeoutMs: number) {
  return {
    expireInSeconds: Math.ceil(timeoutMs / 1000) + 10,
    retryLimit: 20,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 60,
    deleteAfterSeconds: 7 * 86400,
    // A delivery written wakes the workers at once (jobs/boss.ts); retries still wait for their time.
    notify: true,
  };
}

export async function ensureDeliveryQueues(boss: PgBoss, timeoutMs: number): Promise<void> {
  const options = deliveryQueueOptions(timeoutMs);
  await boss.createQueue(DELIVERY_QUEUE, options);
  // createQueue leaves an existing queue as it was: apply the current WEBHOOK_TIMEOUT_MS.
  await boss.updateQueue(DELIVERY_QUEUE, options);
  await boss.createQueue(SWEEP_QUEUE);
}

/** Enqueues an attempt inside the caller's transaction: it exists if and only if that transaction commits. */
export async function enqueueAttempt(boss: PgBoss, tx: Queryable, job: DeliveryJob, startAfter?: Date): Promise<void> {
  await enqueueAttempts(boss, tx, [{ job, startAfter }]);
}

/** Several attempts in one statement, inside the caller's transaction (nothing to do for none). */
export async function enqueueAttempts(boss: PgBoss, tx: Queryable, attempts: { job: DeliveryJob; startAfter?: Date | null }[]): Promise<void> {
  if (attempts.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    attempts.map(({ job, startAfter }) => ({ data: job, ...(startAfter ? { startAfter } : {}) })),
    inTransaction(tx),
  );
}
