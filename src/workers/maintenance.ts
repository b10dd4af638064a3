import type { PgBoss } from "../jobs/boss.ts";
import { MAINTENANCE_QUEUES } from "../jobs/queues.ts";
import type { Logger } from "../logger.ts";

/** The periodic clean-ups, each returning how many rows it removed; the composition root supplies them. */
export interface MaintenanceTasks {
  /** Expired rate-limit windows (every minute). */
  pruneRateLimitWindows(): Promise<number>;
  /** Idempotency records past their 24 hours (hourly). */
  pruneIdempotencyKeys(): Promise<number>;
  /** Dashboard sessions past their 12 hours, sign-in failure windows over, invitations expired a week ago (hourly). */
  pruneDashboard(): Promise<number>;
  /** Market sign-in challenges and sessions long past their end (hourly). */
  pruneMarketSignIns(): Promise<number>;
}

/** Schedules each maintenance task on its queue and works it. */
export async function startMaintenance(boss: PgBoss, logger: Logger, tasks: MaintenanceTasks): Promise<void> {
  for (const [name, queue] of Object.entries(MAINTENANCE_QUEUES) as [keyof MaintenanceTasks, (typeof MAINTENANCE_QUEUES)[keyof MaintenanceTasks]][]) {
    await boss.createQueue(queue.name);
    await boss.schedule(queue.name, queue.cron);
    await boss.work(queue.name, async () => {
      const removed = await tasks[name]();
      logger.debug({ removed, task: name }, "maintenance task done");
    });
  }
}
