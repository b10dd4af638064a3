// The whole service in a process of its own, as `npm start` would run it against an existing database,
// chain and indexer (all from the environment: DATABASE_URL, INDEXER_SCHEMA, RPC_URL, ESCROW_ADDRESS,
// USDC_ADDRESS, SERVICE_PRIVATE_KEY, ARBITER_PRIVATE_KEY, ADMIN_TOKEN, PORT). Prints "ready <baseUrl>" once it serves.
// HOLD_QUEUES (comma-separated pg-boss queues) stops those queues' workers right after start, as if the
// process had died before they polled: the crash test uses it to stop between a committed transition and
// the job it enqueued. SIGTERM stops cleanly; SIGKILL is what the crash test sends.
import { loadConfig } from "../../../src/config.ts";
import { createLogger } from "../../../src/logger.ts";
import { startService } from "../../../src/main.ts";

const config = loadConfig({ ...process.env, SANDBOX: "true", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent" });
const required = (name: string, value: string | undefined): string => {
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const service = await startService({
  config,
  databaseUrl: required("DATABASE_URL", config.databaseUrl),
  adminToken: required("ADMIN_TOKEN", config.adminToken),
  logger: createLogger(config.logLevel),
  indexerSchema: required("INDEXER_SCHEMA", config.indexerSchema),
  chain: {
    rpcUrl: required("RPC_URL", config.rpcUrl),
    chainId: config.chainId,
    escrowAddress: config.escrowAddress!,
    usdcAddress: config.usdcAddress!,
    servicePrivateKey: config.servicePrivateKey!,
    arbiterPrivateKey: config.arbiterPrivateKey!,
  },
});
for (const queue of (process.env.HOLD_QUEUES ?? "").split(",").filter(Boolean)) await service.boss.offWork(queue);
process.stdout.write(`ready ${service.baseUrl}\n`);

process.once("SIGTERM", () => {
  void service.stop().then(() => process.exit(0));
});
