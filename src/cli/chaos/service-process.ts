// The service (API and workers) alone in a process, against a database, chain and indexer that run
// elsewhere and outlive it: what `npm run chaos` kills with SIGKILL and starts again. Configured like
// `npm start` by the environment (DATABASE_URL, INDEXER_SCHEMA, RPC_URL, ESCROW_ADDRESS, USDC_ADDRESS,
// SERVICE_PRIVATE_KEY, ARBITER_PRIVATE_KEY, ADMIN_TOKEN, PORT and the timer settings); it starts no
// database, chain or indexer of its own. Prints "ready <baseUrl>" once the API listens; SIGTERM stops it
// cleanly. Same protocol as test/payments/support/service-process.ts (without its HOLD_QUEUES hook).
import { loadConfig } from "../../config.ts";
import { createLogger } from "../../logger.ts";
import { startService } from "../../main.ts";

const config = loadConfig({ ...process.env, SANDBOX: "true" });
const required = <T>(name: string, value: T | undefined): T => {
  if (value === undefined || value === "") {
    process.stderr.write(`${name} is required\n`);
    process.exit(1);
  }
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
    escrowAddress: required("ESCROW_ADDRESS", config.escrowAddress),
    usdcAddress: required("USDC_ADDRESS", config.usdcAddress),
    servicePrivateKey: required("SERVICE_PRIVATE_KEY", config.servicePrivateKey),
    arbiterPrivateKey: required("ARBITER_PRIVATE_KEY", config.arbiterPrivateKey),
  },
});
process.stdout.write(`ready ${service.baseUrl}\n`);
process.once("SIGTERM", () => {
  void service.stop().then(() => process.exit(0));
});
