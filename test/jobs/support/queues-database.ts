import pg from "pg";
import { startJobs, type PgBoss } from "../../../src/jobs/boss.ts";
import { createOrderQueues, ensureDeliveryQueues } from "../../../src/jobs/queues.ts";
import { createLogger } from "../../../src/logger.ts";
import { createTestDatabase } from "../../support/database.ts";

/** A database of its own with the service's job queues, a pg-boss instance on it and a pool of `sessions`; `close` undoes it all. */
export async function startQueuesDatabase(sessions: number): Promise<{ url: string; pool: pg.Pool; boss: PgBoss; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.url, max: sessions });
  const boss = await startJobs(database.url, createLogger("silent"));
  await createOrderQueues(boss);
  await ensureDeliveryQueues(boss, 5000);
  return {
    url: database.url,
    pool,
    boss,
    async close() {
      await boss.stop({ graceful: false });
      await pool.end();
      await database.drop();
    },
  };
}
