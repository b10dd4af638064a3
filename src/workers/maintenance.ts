import type { Pool } from "../db/pool.ts";
import { pruneRateLimitWindows } from "../http/middleware/rate-limit.ts";
import type { Logger } from "../logger.ts";
import type { PgBoss } from "../jobs/boss.ts";

const PRUNE_RATE_LIMITS = "maintenance.prune-rate-limits";
const PRUNE_IDEMPOTENCY_KEYS = "maintenance.prune-idempotency-keys";

/** Periodic clean-up of expired rate-limit windows and idempotency records (kept 24 h). */
export async function scheduleMaintenance(boss: PgBoss, pool: Pool, logger: Logger): Promise<void> {
  await boss.createQueue(PRUNE_RATE_LIMITS);
  await boss.createQueue(PRUNE_IDEMPOTENCY_KEYS);
  await boss.schedule(PRUNE_RATE_LIMITS, "* * * * *");
  await boss.schedule(PRUNE_IDEMPOTENCY_KEYS, "17 * * * *");
  await boss.work(PRUNE_RATE_LIMITS, async () => {
    const removed = await pruneRateLimitWindows(pool);
    logger.debug({ removed }, "pruned rate-limit windows");
  });
  await boss.work(PRUNE_IDEMPOTENCY_KEYS, async () => {
    await pool.query("DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'");
  });
}
