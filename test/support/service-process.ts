// Runs the service in its own process, so a test can SIGKILL it mid-trade and start another on the same
// database, chain and indexer. Reads OFFRAMP_TEST_SERVICE (JSON: env, databaseUrl, indexerSchema, chain)
// and prints "READY <baseUrl>" once the API listens.
import { loadConfig } from "../../src/config.ts";
import type { ChainSettings } from "../../src/chain/escrow-gateway.ts";
import { createLogger } from "../../src/logger.ts";
import { startService } from "../../src/main.ts";
import { ADMIN_TOKEN } from "./service.ts";

export interface ServiceProcessSpec {
  env: Record<string, string>;
  databaseUrl: string;
  indexerSchema: string;
  chain: ChainSettings;
}

const spec = JSON.parse(process.env.OFFRAMP_TEST_SERVICE ?? "{}") as ServiceProcessSpec;
const config = loadConfig({ SANDBOX: "true", PORT: "0", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent", ...spec.env });
const service = await startService({
  config,
  databaseUrl: spec.databaseUrl,
  adminToken: ADMIN_TOKEN,
  logger: createLogger(config.logLevel),
  chain: spec.chain,
  indexerSchema: spec.indexerSchema,
});
process.stdout.write(`READY ${service.baseUrl}\n`);
process.once("SIGTERM", () => {
  void service.stop().then(() => process.exit(0));
});
