import type { Job } from "pg-boss";
import { withTransaction, type Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { PaymentVerificationAttempt, PaymentVerifier } from "../payments/verification.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";
import { recordPermanentFailure, retryingOnlyWhatCanSucceed } from "../jobs/retry.ts";
import { PAYMENT_VERIFY_QUEUE } from "../jobs/queues.ts";

/** The attempt was taken over by another worker (it expired and was retried): nothing of this one is kept. */
class AttemptLostError extends Error {}

/**
 * Works the `payments.verify` queue that the order machine's verifyPayment effect fills. Each job is
 * one attempt; its outcome (a verdict applied to the order, or the next attempt as a delayed job) and
 * the job's completion commit in one transaction. If the completion touches no row (this worker no
 * longer holds the attempt) the transaction is rolled back, so an attempt's outcome is committed once.
 * An attempt that throws (database or programming error) is retried by pg-boss with the queue's backoff.
 */
export async function startPaymentVerificationWorker(deps: { boss: PgBoss; pool: Pool; verifier: PaymentVerifier; logger: Logger }): Promise<void> {
  const { boss, pool, verifier, logger } = deps;
  const handle = async (job: Job<PaymentVerificationAttempt>) => {
    try {
      const outcome = await verifier.attempt(job.data, {
        settle: (work) =>
          withTransaction(pool, async (tx) => {
            await work(tx);
            const completion = (await boss.complete(PAYMENT_VERIFY_QUEUE, { id: job.id, retryCount: job.retryCount }, null, inTransaction(tx))) as { affected?: number };
            if (completion.affected !== 1) throw new AttemptLostError(`verification attempt ${job.id}/${job.retryCount} is no longer held`);
          }),
        scheduleNext: async (tx, next, startAfter) => {
          await boss.send(PAYMENT_VERIFY_QUEUE, next, { startAfter, ...inTransaction(tx) });
        },
      });
      logger.info({ orderId: job.data.orderId, trackingKey: job.data.cepTrackingKey, attempt: job.data.attempt ?? 1, outcome }, "payment verification attempt settled");
    } catch (error) {
      if (error instanceof AttemptLostError) {
        logger.warn({ orderId: job.data.orderId, jobId: job.id }, error.message);
        return;
      }
      throw error;
    }
  };
  await boss.work<PaymentVerificationAttempt>(PAYMENT_VERIFY_QUEUE, { localConcurrency: 2, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, retryingOnlyWhatCanSucceed(handle, recordPermanentFailure(logger, PAYMENT_VERIFY_QUEUE)));
}
