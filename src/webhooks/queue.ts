import type { Queryable } from "../db/pool.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";
import { DELIVERY_QUEUE, type DeliveryJob } from "../jobs/queues.ts";

/** Enqueues an attempt inside the caller's transaction: it exists if and only if that transaction commits. */
export async function enqueueAttempt(boss: PgBoss, tx: Queryable, job: DeliveryJob, startAfter?: Date): Promise<void> {
  await boss.send(DELIVERY_QUEUE, job, {
    ...(startAfter ? { startAfter } : {}),
    ...inTransaction(tx),
  });
}
