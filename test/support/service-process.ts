// Runs the service in its own process, so a test can SIGKILL it mid-trade and start another on the same
// database, chain and indexer. Prints "READY <baseUrl>" once the API listens; SIGTERM stops cleanly.
// Either OFFRAMP_TEST_SERVICE (JSON: env, databaseUrl, indexerSchema, chain) says what to run on, or,
// without it, the environment does, as `npm start` would read it against an existing database, chain and
// indexer (DATABASE_URL, INDEXER_SCHEMA, RPC_URL, ESCROW_ADDRESS, USDC_ADDRESS, SERVICE_PRIVATE_KEY,
// ARBITER_PRIVATE_KEY, ADMIN_TOKEN, PORT).
// HOLD_QUEUES (comma-separated pg-boss queues) stops those queues' workers right after start, as if the
// process had died before they polled: a crash test uses it to stop between a committed transition and
// the job it enqueued.
import type { ChainSettings } from "../../src/chain/escrow-gateway.ts";
import { loadConfig, type Config } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { startService, type ServiceOptions } from "../../src/main.ts";
import { ADMIN_TOKEN } from "./constants.ts";

export interface ServiceProcessSpec {
  env: Record<string, string>;
  databaseUrl: string;
  indexerSchema: string;
  chain: ChainSettings;
}

const required = (name: string, value: string | undefined): string => {
  if (!value) throw new Error(`${name} is required`);
  return value;
};

function fromSpec(spec: ServiceProcessSpec): Omit<ServiceOptions, "logger"> {
  const config = loadConfig({ SANDBOX: "true", PORT: "0", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent", ...spec.env });
  return { config, databaseUrl: spec.databaseUrl, adminToken: ADMIN_TOKEN, chain: spec.chain, indexerSchema: spec.indexerSchema };
}

function fromEnvironment(): Omit<ServiceOptions, "logger"> {
  const config: Config = loadConfig({ ...process.env, SANDBOX: "true", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent" });
  return {
    config,
    databaseUrl: required("DATABASE_URL", config.databaseUrl),
    adminToken: required("ADMIN_TOKEN", config.adminToken),
    indexerSchema: required("INDEXER_SCHEMA", config.indexerSchema),
    chain: {
      rpcUrl: required("RPC_URL", config.rpcUrl),
      chainId: config.chainId,
      escrowAddress: config.escrowAddress!,
      usdcAddress: config.usdcAddress!,
      servicePrivateKey: config.servicePrivateKey!,
      arbiterPrivateKey: config.arbiterPrivateKey!,
    },
  };
}

const spec = process.env.OFFRAMP_TEST_SERVICE;
const options = spec ? fromSpec(JSON.parse(spec) as ServiceProcessSpec) : fromEnvironment();
const service = await startService({ ...options, logger: createLogger(options.config.logLevel) });
for (const queue of (process.env.HOLD_QUEUES ?? "").split(",").filter(Boolean)) await service.boss.offWork(queue);
process.stdout.write(`READY ${service.baseUrl}\n`);
process.once("SIGTERM", () => {
  void service.stop().then(() => process.exit(0));
});
