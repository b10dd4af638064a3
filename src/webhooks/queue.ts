import type { Queryable } from "../db/pool.ts";
import type { PgBoss } from "../jobs/boss.ts";
import { jobWritesAtOnce, type JobWrites } from "../jobs/job-writes.ts";
import { DELIVERY_QUEUE, type DeliveryJob } from "../jobs/queues.ts";

export interface DeliveryAttempt {
  job: DeliveryJob;
  startAfter?: Date | null;
}

/** Enqueues an attempt inside the caller's transaction: it exists if and only if that transaction commits. */
export async function enqueueAttempt(boss: PgBoss, tx: Queryable, job: DeliveryJob, startAfter?: Date): Promise<void> {
  await enqueueAttempts(boss, tx, [{ job, startAfter }]);
}

/** Several attempts in one statement, inside the caller's transaction (nothing to do for none). */
export async function enqueueAttempts(boss: PgBoss, tx: Queryable, attempts: DeliveryAttempt[]): Promise<void> {
  await writeAttempts(jobWritesAtOnce(boss, tx), attempts);
}

/** The attempts' jobs through `writes` (at once, or held for the transaction's other jobs). */
export async function writeAttempts(writes: JobWrites, attempts: DeliveryAttempt[]): Promise<void> {
  await writes.insert(
    DELIVERY_QUEUE,
    attempts.map(({ job, startAfter }) => ({ data: job, ...(startAfter ? { startAfter } : {}) })),
  );
}
