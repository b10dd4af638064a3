import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { ConfigError, loadConfig } from "../../src/config.ts";

// Decisions section 1: configuration by environment variable, read once into a typed object; a bad
// value stops start-up with a ConfigError naming the variable; production requires its variables.

const PRODUCTION: Record<string, string> = {
  NODE_ENV: "production",
  DATABASE_URL: "postgres://offramp:secret@db.internal:5432/offramp",
  RPC_URL: "https://rpc.example.com",
  ESCROW_ADDRESS: `0x${"a".repeat(40)}`,
  USDC_ADDRESS: `0x${"b".repeat(40)}`,
  SERVICE_PRIVATE_KEY: `0x${"1".repeat(64)}`,
  ARBITER_PRIVATE_KEY: `0x${"2".repeat(64)}`,
  ADMIN_ADDRESS: `0x${"c".repeat(40)}`,
  ADMIN_TOKEN: "a-long-enough-admin-token-of-32-chars",
  BANXICO_SIE_URL: "https://www.banxico.org.mx/SieAPIRest/service/v1/",
  BANXICO_TOKEN: "bmx-token",
  FALLBACK_RATE_URL: "https://api.frankfurter.dev/v1",
  CEP_URL: "https://www.banxico.org.mx/cep",
  KYC_PROVIDER_URL: "https://kyc.example.com",
  KYC_PROVIDER_API_KEY: "kyc-key",
  KYC_PROVIDER_SECRET: "kyc-secret",
};

function assertConfigError(env: Record<string, string>, variable: string): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
      assert.equal(error.variable, variable);
      assert.ok(error.message.includes(variable), `the message does not name ${variable}: ${error.message}`);
      return true;
    },
  );
}

test("with no variables the sandbox defaults of decisions section 1 apply", () => {
  const config = loadConfig({});
  assert.deepEqual(
    {
      port: config.port,
      host: config.host,
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      rpcUrl: config.rpcUrl,
      chainId: config.chainId,
      adminToken: config.adminToken,
      sandbox: config.sandbox,
      production: config.production,
      quoteTtlSeconds: config.quoteTtlSeconds,
      rateValiditySeconds: config.rateValiditySeconds,
      depositTimeoutSeconds: config.depositTimeoutSeconds,
      listingTimeoutSeconds: config.listingTimeoutSeconds,
      lockWindowSeconds: config.lockWindowSeconds,
      webhookRetryDelaysSeconds: config.webhookRetryDelaysSeconds,
      webhookTimeoutMs: config.webhookTimeoutMs,
      webhookAllowPrivate: config.webhookAllowPrivate,
      trustProxy: config.trustProxy,
      sandboxUsdMxn: config.sandboxUsdMxn,
    },
    {
      port: 3000,
      host: "127.0.0.1",
      databaseUrl: undefined,
      dataDir: ".data",
      rpcUrl: undefined,
      chainId: 31337,
      adminToken: undefined,
      sandbox: true,
      production: false,
      quoteTtlSeconds: 300,
      rateValiditySeconds: 300,
      depositTimeoutSeconds: 1800,
      listingTimeoutSeconds: 86400,
      lockWindowSeconds: 86400,
      webhookRetryDelaysSeconds: [30, 120, 600, 1800, 7200],
      webhookTimeoutMs: 10000,
      webhookAllowPrivate: true,
      trustProxy: 0,
      sandboxUsdMxn: "17.2500",
    },
  );
});

test("a complete production configuration loads with sandbox and private webhook URLs off", () => {
  const config = loadConfig(PRODUCTION);
  assert.equal(config.production, true);
  assert.equal(config.sandbox, false);
  assert.equal(config.webhookAllowPrivate, false);
  assert.equal(config.databaseUrl, PRODUCTION.DATABASE_URL);
  assert.equal(config.banxicoSieUrl, "https://www.banxico.org.mx/SieAPIRest/service/v1", "a trailing slash is dropped");
  assert.equal(config.adminToken, "a-long-enough-admin-token-of-32-chars");
});

test("values are parsed into their types", () => {
  const config = loadConfig({
    PORT: "8080",
    TRUST_PROXY: "2",
    WEBHOOK_ALLOW_PRIVATE: "0",
    WEBHOOK_RETRY_DELAYS_SECONDS: "5, 10,20",
    QUOTE_TTL_SECONDS: "60",
    RATE_VALIDITY_SECONDS: "120",
    SANDBOX_USD_MXN: "18.123456",
    LOG_LEVEL: "warn",
  });
  assert.equal(config.port, 8080);
  assert.equal(config.trustProxy, 2, "TRUST_PROXY is the number of proxies in front");
  assert.equal(config.webhookAllowPrivate, false);
  assert.deepEqual(config.webhookRetryDelaysSeconds, [5, 10, 20]);
  assert.equal(config.quoteTtlSeconds, 60);
  assert.equal(config.rateValiditySeconds, 120);
  assert.equal(config.sandboxUsdMxn, "18.123456");
  assert.equal(config.logLevel, "warn");
});

test("an empty or blank variable counts as unset", () => {
  const config = loadConfig({ PORT: "", QUOTE_TTL_SECONDS: "  ", DATABASE_URL: "" });
  assert.equal(config.port, 3000);
  assert.equal(config.quoteTtlSeconds, 300);
  assert.equal(config.databaseUrl, undefined);
});

const badValues: [string, string][] = [
  ["PORT", "http"],
  ["PORT", "65536"],
  ["PORT", "-1"],
  ["CHAIN_ID", "0"],
  ["CHAIN_ID", "base"],
  ["QUOTE_TTL_SECONDS", "0"],
  ["QUOTE_TTL_SECONDS", "5m"],
  ["RATE_VALIDITY_SECONDS", "-300"],
  ["DEPOSIT_TIMEOUT_SECONDS", "1.5"],
  ["LISTING_TIMEOUT_SECONDS", "forever"],
  ["LOCK_WINDOW_SECONDS", "0"],
  ["WEBHOOK_RETRY_DELAYS_SECONDS", "30,,600"],
  ["WEBHOOK_RETRY_DELAYS_SECONDS", "30,2m"],
  ["WEBHOOK_TIMEOUT_MS", "0"],
  ["WEBHOOK_ALLOW_PRIVATE", "sometimes"],
  ["TRUST_PROXY", "on-prem"],
  ["TRUST_PROXY", "true"],
  ["TRUST_PROXY", "-1"],
  ["SANDBOX", "maybe"],
  ["DATABASE_URL", "mysql://localhost/offramp"],
  ["RPC_URL", "not a url"],
  ["RPC_URL", "ws://localhost:8545"],
  ["RPC_WS_URL", "https://rpc.example.com"],
  ["RPC_WS_URL", "wss//rpc.example.com"],
  ["PONDER_POLLING_INTERVAL_MS", "50"],
  ["PONDER_POLLING_INTERVAL_MS", "1s"],
  ["PONDER_RPC_LANES", "0"],
  ["ESCROW_ADDRESS", "0x1234"],
  ["USDC_ADDRESS", `${"a".repeat(40)}`],
  ["SERVICE_PRIVATE_KEY", "0xabc"],
  ["ARBITER_PRIVATE_KEY", `0x${"z".repeat(64)}`],
  ["ADMIN_TOKEN", "too-short"],
  ["BANXICO_SIE_URL", "banxico"],
  ["FALLBACK_RATE_URL", "ftp://rates.example.com"],
  ["CEP_URL", "cep"],
  ["KYC_PROVIDER_URL", "kyc"],
  ["SANDBOX_USD_MXN", "seventeen"],
  ["SANDBOX_USD_MXN", "0"],
  ["SANDBOX_USD_MXN", "-17.25"],
  ["LOG_LEVEL", "loud"],
  ["PUBLIC_URL", "offramp.example"],
  ["PUBLIC_URL", "ftp://offramp.example"],
  ["PUBLIC_URL", "https://offramp.example/market"],
  ["PUBLIC_URL", "https://user:pass@offramp.example"],
];
for (const [variable, value] of badValues) {
  test(`${variable}="${value}" stops with a ConfigError naming ${variable}`, () => {
    assertConfigError({ [variable]: value }, variable);
  });
}

for (const variable of Object.keys(PRODUCTION).filter((name) => name !== "NODE_ENV")) {
  test(`production without ${variable} stops with a ConfigError naming it`, () => {
    const env = { ...PRODUCTION };
    delete env[variable];
    assertConfigError(env, variable);
  });
}

test("RPC_WS_URL takes a ws:// or wss:// endpoint beside RPC_URL; the indexer's settings stay unset unless given", () => {
  const config = loadConfig({ ...PRODUCTION, RPC_WS_URL: "wss://rpc.example.com/ws", PONDER_POLLING_INTERVAL_MS: "2000", PONDER_RPC_LANES: "2" });
  assert.deepEqual([config.rpcWsUrl, config.indexerPollingIntervalMs, config.indexerRpcLanes], ["wss://rpc.example.com/ws", 2000, 2]);
  const defaults = loadConfig(PRODUCTION);
  assert.deepEqual([defaults.rpcWsUrl, defaults.indexerPollingIntervalMs, defaults.indexerRpcLanes], [undefined, undefined, undefined]);
});

test("RPC_WS_URL without RPC_URL stops: the local node serves its own", () => {
  assertConfigError({ RPC_WS_URL: "ws://127.0.0.1:8545" }, "RPC_WS_URL");
});

const PONDER_CONFIG = new URL("../../ponder.config.ts", import.meta.url).href;

test("Ponder's configuration holds PONDER_WS_URL to RPC_WS_URL's rule: it reads its own environment", () => {
  // ponder.config.ts runs in Ponder's process, so it checks its WebSocket endpoint itself, with config's rule.
  const values = ["ws://127.0.0.1:8545", "wss://rpc.example.com/ws", "https://rpc.example.com", "wss//rpc.example.com", "ws://", "ws://[::1"];
  const ponderEnv = { PATH: process.env.PATH ?? "", DATABASE_URL: "postgres://127.0.0.1/none", ESCROW_ADDRESS: `0x${"a".repeat(40)}`, ESCROW_START_BLOCK: "0" };
  const verdicts = values.map((value) => {
    let service = true;
    try {
      loadConfig({ ...PRODUCTION, RPC_WS_URL: value });
    } catch {
      service = false;
    }
    const ponder = spawnSync(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(PONDER_CONFIG)})`], { env: { ...ponderEnv, PONDER_WS_URL: value }, encoding: "utf8" });
    if (ponder.status !== 0) assert.match(ponder.stderr, /PONDER_WS_URL must be a ws:\/\/ or wss:\/\/ URL/);
    return [value, service, ponder.status === 0];
  });
  assert.deepEqual(verdicts, values.map((value, index) => [value, index < 2, index < 2]));
});

test("SANDBOX=false requires the production variables too", () => {
  const env: Record<string, string> = { ...PRODUCTION, SANDBOX: "false" };
  delete env.NODE_ENV;
  delete env.CEP_URL;
  assertConfigError(env, "CEP_URL");
});

// Decisions section 19: keys and the sandbox's reach.

test("TRUST_PROXY=false and 0 both mean no proxy", () => {
  assert.equal(loadConfig({ TRUST_PROXY: "false" }).trustProxy, 0);
  assert.equal(loadConfig({ TRUST_PROXY: "0" }).trustProxy, 0);
});

test("SANDBOX=true on a chain other than the local one (31337) stops, naming SANDBOX", () => {
  assertConfigError({ SANDBOX: "true", CHAIN_ID: "8453" }, "SANDBOX");
});

test("outside the sandbox an ADMIN_TOKEN shorter than 32 characters stops", () => {
  assertConfigError({ ...PRODUCTION, ADMIN_TOKEN: "x".repeat(31) }, "ADMIN_TOKEN");
  assert.equal(loadConfig({ ...PRODUCTION, ADMIN_TOKEN: "x".repeat(32) }).adminToken, "x".repeat(32));
});

test("outside the sandbox the arbiter key must not be the service key", () => {
  assertConfigError({ ...PRODUCTION, ARBITER_PRIVATE_KEY: PRODUCTION.SERVICE_PRIVATE_KEY! }, "ARBITER_PRIVATE_KEY");
});

test("outside the sandbox ADMIN_ADDRESS must not be the service's or the arbiter's account", () => {
  // 0x111…1's address, whatever the letter case it is written in.
  const serviceAddress = "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A";
  assertConfigError({ ...PRODUCTION, ADMIN_ADDRESS: serviceAddress.toLowerCase() }, "ADMIN_ADDRESS");
});

test("outside the sandbox the deployer's key, when given, must differ from every role's", () => {
  assertConfigError({ ...PRODUCTION, DEPLOYER_PRIVATE_KEY: PRODUCTION.ARBITER_PRIVATE_KEY! }, "ARBITER_PRIVATE_KEY");
  assert.doesNotThrow(() => loadConfig({ ...PRODUCTION, DEPLOYER_PRIVATE_KEY: `0x${"3".repeat(64)}` }));
});

test("in the sandbox the development accounts may share roles", () => {
  assert.doesNotThrow(() => loadConfig({ SERVICE_PRIVATE_KEY: `0x${"1".repeat(64)}`, ARBITER_PRIVATE_KEY: `0x${"1".repeat(64)}` }));
});

test("PUBLIC_URL is kept as its origin (the SIWE domain and URI); unset, the service uses its listen address", () => {
  assert.equal(loadConfig({ PUBLIC_URL: "https://Offramp.Example:8443/" }).publicUrl, "https://offramp.example:8443");
  assert.equal(loadConfig({}).publicUrl, undefined);
});

// Decisions sections 1 and 7: the fee cap of transaction replacements.

test("MAX_FEE_PER_GAS_GWEI is optional on the local chain and required on any other, naming it", () => {
  assert.equal(loadConfig({}).maxFeePerGasGwei, undefined);
  assertConfigError({ ...PRODUCTION, CHAIN_ID: "8453" }, "MAX_FEE_PER_GAS_GWEI");
  assert.equal(loadConfig({ ...PRODUCTION, CHAIN_ID: "8453", MAX_FEE_PER_GAS_GWEI: "0.5" }).maxFeePerGasGwei, "0.5");
});

for (const value of ["0", "-1", "abc", "1e3", "0.0000000001"]) {
  test(`MAX_FEE_PER_GAS_GWEI="${value}" stops with a ConfigError naming it`, () => {
    assertConfigError({ MAX_FEE_PER_GAS_GWEI: value }, "MAX_FEE_PER_GAS_GWEI");
  });
}
