import type { Queryable } from "../db/pool.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";
import { DELIVERY_QUEUE, type DeliveryJob } from "../jobs/queues.ts";

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
