import type { Job } from "pg-boss";
import { allAnswered, prepared, withTransaction, type Pool, type PoolClient, type Queryable } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { samePayment, type OrderContext, type OrderStatus, type PaymentReportId } from "../orders/machine.ts";
import type { AttemptOutcome, PaymentVerificationAttempt, PaymentVerifier } from "../payments/verification.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";
import { recordPermanentFailure, retryingOnlyWhatCanSucceed } from "../jobs/retry.ts";
import { ONE_JOB_AT_A_TIME, PAYMENT_VERIFY_QUEUE, type PaymentVerificationJob, type ReportProgress } from "../jobs/queues.ts";

/** The attempt was taken over by another worker (it expired and was retried): nothing of this one is kept. */
class AttemptLostError extends Error {}

/**
 * Workers of the verification queue in each instance: the CEP portal lookups in flight at once, which the
 * central bank's portal bears. About 20 reports a second an instance (docs/operations.md section 6).
 */
export const PAYMENT_VERIFY_CONCURRENCY = 4;

/** The LOCKED orders with payment reports being verified; served by the partial index of migration 1764500000400, whose predicate is this one. */
export const ORDERS_VERIFYING_PAYMENTS = `SELECT id FROM orders WHERE status = 'LOCKED' AND jsonb_array_length(coalesce(machine_snapshot->'context'->'verifyingPayments', '[]'::jsonb)) > 0`;

/**
 * Where each of the order's reports under verification stands: the progress carried by the job for those
 * still being verified, and a first attempt due now for any reported since. Reports no longer being
 * verified (verified, rejected, the order moved on) drop out.
 */
function progressOf(verifying: readonly PaymentReportId[], carried: readonly ReportProgress[], now: Date): ReportProgress[] {
  return verifying.map((report) => {
    const known = carried.find((entry) => samePayment(entry, report));
    return known ?? { cepTrackingKey: report.cepTrackingKey, operationDate: report.operationDate, senderBankCode: report.senderBankCode, attempt: 1, dueAt: now.toISOString() };
  });
}

/** The report to try now: the one due the longest (the first reported among equals); none when none is due. */
function nextDue(progress: readonly ReportProgress[], now: Date): ReportProgress | undefined {
  const due = progress.filter((entry) => Date.parse(entry.dueAt) <= now.getTime());
  return due.reduce<ReportProgress | undefined>((best, entry) => (!best || Date.parse(entry.dueAt) < Date.parse(best.dueAt) ? entry : best), undefined);
}

interface OrderReports {
  status: OrderStatus;
  verifying: PaymentReportId[];
}

/** The order's status and reports being verified; `lock` takes its row lock (in a transaction). */
async function readOrder(db: Queryable, orderId: string, lock: boolean): Promise<OrderReports | undefined> {
  const { rows } = await db.query<{ status: OrderStatus; machine_snapshot: { context: OrderContext } }>(
    prepared(
      `SELECT status, machine_snapshot FROM orders WHERE id = $1${lock ? " FOR NO KEY UPDATE" : ""}`,
      [orderId],
    ),
  );
  const row = rows[0];
  if (!row) return undefined;
  return { status: row.status, verifying: row.status === "LOCKED" ? (row.machine_snapshot.context.verifyingPayments ?? []) : [] };
}

/**
 * Works the `payments.verify` queue that the order machine's verifyPayment effect fills, fairly across
 * orders (decisions 19). The queue holds at most one job per order (policy `exclusive`, the order id as
 * singleton key). A job makes one CEP portal attempt for the order's report due the longest, then, in the
 * transaction that commits that attempt's outcome and completes the job, queues the order's next job if
 * it still has reports being verified, due when the earliest of them is. A new job goes behind every job
 * already waiting, so orders take turns: however many reports one order gets, it holds one place in the
 * queue and one worker at most, and no other order's verification waits behind its reports.
 *
 * The settling transaction locks the order row first: a report applied meanwhile (whose own job was not
 * added, this one being active) is seen by it, or, if it commits after, finds this job completed and adds
 * the order's next job itself. If the completion touches no row (this worker no longer holds the job) the
 * transaction is rolled back, so an attempt's outcome is committed once. An attempt that throws (database
 * or programming error) is retried by pg-boss with the queue's backoff.
 */
export async function startPaymentVerificationWorker(deps: { boss: PgBoss; pool: Pool; verifier: PaymentVerifier; logger: Logger; now?: () => Date }): Promise<void> {
  const { boss, pool, verifier, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Runs `work`, completes the job and queues the order's next one, in one transaction. */
  const settle = (job: Job<PaymentVerificationJob>, carried: ReportProgress[], work: (tx: PoolClient) => Promise<ReportProgress | undefined>) =>
    withTransaction(pool, async (tx) => {
      const before = await readOrder(tx, job.data.orderId, true);
      const retried = before ? await work(tx) : undefined;
      // The completion does not wait for the read's answer: both in one round trip.
      const [after, completion] = await allAnswered([
        readOrder(tx, job.data.orderId, true),
        boss.complete(PAYMENT_VERIFY_QUEUE, { id: job.id, retryCount: job.retryCount }, null, inTransaction(tx)) as Promise<{ affected?: number }>,
      ]);
      if (completion.affected !== 1) throw new AttemptLostError(`verification job ${job.id}/${job.retryCount} is no longer held`);
      const kept = carried.map((entry) => (retried && samePayment(entry, retried) ? retried : entry));
      const progress = progressOf(after?.verifying ?? [], kept, now());
      if (progress.length === 0) return;
      const startAfter = new Date(Math.min(...progress.map((entry) => Date.parse(entry.dueAt))));
      await boss.send(PAYMENT_VERIFY_QUEUE, { orderId: job.data.orderId, progress } satisfies PaymentVerificationJob, {
        singletonKey: job.data.orderId,
        startAfter,
        ...inTransaction(tx),
      });
    });

  const handle = async (job: Job<PaymentVerificationJob>) => {
    const { orderId } = job.data;
    try {
      const order = await readOrder(pool, orderId, false);
      const carried = progressOf(order?.verifying ?? [], job.data.progress ?? [], now());
      const due = nextDue(carried, now());
      if (!due) {
        // Nothing due (woken early, or nothing left to verify): only the next job, if any, is queued.
        await settle(job, carried, async () => undefined);
        return;
      }
      const attempt: PaymentVerificationAttempt = {
        orderId,
        cepTrackingKey: due.cepTrackingKey,
        operationDate: due.operationDate,
        senderBankCode: due.senderBankCode,
        attempt: due.attempt,
        ...(due.notFound !== undefined ? { notFound: due.notFound } : {}),
        ...(due.lastAnswer !== undefined ? { lastAnswer: due.lastAnswer } : {}),
      };
      // The verifier's next attempt (a retry) is not a job of its own: it becomes this report's progress,
      // carried by the order's next job.
      let retried: ReportProgress | undefined;
      const outcome: AttemptOutcome = await verifier.attempt(attempt, {
        settle: (work) =>
          settle(job, carried, async (tx) => {
            retried = undefined;
            await work(tx);
            return retried;
          }),
        scheduleNext: async (_tx, next, startAfter) => {
          retried = {
            cepTrackingKey: next.cepTrackingKey,
            operationDate: next.operationDate,
            senderBankCode: next.senderBankCode,
            attempt: next.attempt ?? due.attempt + 1,
            ...(next.notFound !== undefined ? { notFound: next.notFound } : {}),
            ...(next.lastAnswer !== undefined ? { lastAnswer: next.lastAnswer } : {}),
            dueAt: startAfter.toISOString(),
          };
        },
      });
      logger.info({ orderId, trackingKey: due.cepTrackingKey, attempt: due.attempt, outcome }, "payment verification attempt settled");
    } catch (error) {
      if (error instanceof AttemptLostError) {
        logger.warn({ orderId, jobId: job.id }, error.message);
        return;
      }
      throw error;
    }
  };
  // Orders whose reports are being verified but that have no job: their job was lost with a queue
  // recreated under the per-order policy (jobs/queues.ts), or failed for good. An order that has one is
  // left alone (exclusive by order id).
  const { rows } = await pool.query<{ id: string }>(ORDERS_VERIFYING_PAYMENTS);
  for (const { id } of rows) await boss.send(PAYMENT_VERIFY_QUEUE, { orderId: id } satisfies PaymentVerificationJob, { singletonKey: id });
  await boss.work<PaymentVerificationJob>(
    PAYMENT_VERIFY_QUEUE,
    { ...ONE_JOB_AT_A_TIME, localConcurrency: PAYMENT_VERIFY_CONCURRENCY },
    retryingOnlyWhatCanSucceed(handle, recordPermanentFailure(logger, PAYMENT_VERIFY_QUEUE)),
  );
}
