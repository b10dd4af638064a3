// A webhook delivery worker in a process of its own, on DATABASE_URL, configured by the WEBHOOK_*
// variables like the service. Prints "ready" once it takes jobs; SIGTERM stops it cleanly, SIGKILL is
// what the crash test sends. pg-boss supervises every second here (the service's default is a minute),
// so a dead worker's job expires and is retried within seconds of expireInSeconds.
import { PgBoss } from "pg-boss";
import { loadConfig } from "../../../src/config.ts";
import { createPool } from "../../../src/db/pool.ts";
import { createLogger } from "../../../src/logger.ts";
import { startWebhookDelivery } from "../../../src/workers/webhook-deliveries.ts";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error("DATABASE_URL is required");
const config = loadConfig({ ...process.env, SANDBOX: "true" });
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? "silent");
const boss = new PgBoss({ connectionString: databaseUrl, schema: "pgboss", superviseIntervalSeconds: 1, monitorIntervalSeconds: 1 });
boss.on("error", (error) => logger.error({ err: error }, "job queue error"));
await boss.start();
const pool = createPool(databaseUrl, 5);
const delivery = await startWebhookDelivery({ pool, boss, logger, config });
process.stdout.write("ready\n");

process.once("SIGTERM", () => {
  void (async () => {
    await delivery.stop();
    await boss.stop({ graceful: true, timeout: 5000 });
    await pool.end();
    process.exit(0);
  })();
});
