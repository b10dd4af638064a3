// A webhook delivery worker in a process of its own, on DATABASE_URL, configured by the WEBHOOK_*
// variables like the service. Prints "ready" once it claims deliveries; SIGTERM stops it cleanly, SIGKILL
// is what the crash test sends.
import { loadConfig } from "../../../src/config.ts";
import { createPool } from "../../../src/db/pool.ts";
import { createLogger } from "../../../src/logger.ts";
import { startWebhookDelivery } from "../../../src/workers/webhook-deliveries.ts";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error("DATABASE_URL is required");
const config = loadConfig({ ...process.env, SANDBOX: "true" });
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? "silent");
const pool = createPool(databaseUrl, 5);
const delivery = await startWebhookDelivery({ pool, databaseUrl, logger, config });
process.stdout.write("ready\n");

process.once("SIGTERM", () => {
  void (async () => {
    await delivery.stop();
    await pool.end();
    process.exit(0);
  })();
});
