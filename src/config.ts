// Configuration is read from the environment once, at start, and validated into one typed object.
// A bad value stops start-up with a message naming the variable (decisions section 1).

export interface Config {
  port: number;
  host: string;
  /** Unset: an embedded PostgreSQL in DATA_DIR. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Unset: a local Hardhat node started by `npm start`. */
  rpcUrl: string | undefined;
  chainId: number;
  escrowAddress: `0x${string}` | undefined;
  usdcAddress: `0x${string}` | undefined;
  servicePrivateKey: `0x${string}` | undefined;
  arbiterPrivateKey: `0x${string}` | undefined;
  /** Generated at start in sandbox when unset; required in production. */
  adminToken: string | undefined;
  sandbox: boolean;
  production: boolean;
  quoteTtlSeconds: number;
  rateValiditySeconds: number;
  depositTimeoutSeconds: number;
  listingTimeoutSeconds: number;
  lockWindowSeconds: number;
  webhookRetryDelaysSeconds: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  trustProxy: boolean;
  /** Unset in sandbox: the built-in simulator. */
  banxicoSieUrl: string | undefined;
  banxicoToken: string | undefined;
  fallbackRateUrl: string | undefined;
  cepUrl: string | undefined;
  kycProviderUrl: string | undefined;
  kycProviderApiKey: string | undefined;
  kycProviderSecret: string | undefined;
  sandboxUsdMxn: string;
  /** Escrow events are applied once this many blocks are indexed on top of theirs (0 on the local chain). */
  chainConfirmations: number;
  /** Ponder's schema; set by `npm start` for the indexer it runs, required when the indexer runs elsewhere. */
  indexerSchema: string | undefined;
  /** Sanctions lists in the OFAC SDN CSV format; sandbox adds data/sanctions/sandbox-sdn.csv. */
  sanctionsListFiles: string[];
  logLevel: string;
}

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function url(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute URL, got "${raw}"`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new ConfigError(name, "must be an http(s) URL");
  return raw.replace(/\/+$/, "");
}

function address(env: Env, name: string): `0x${string}` | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^0x[0-9a-fA-F]{40}$/.test(raw)) throw new ConfigError(name, "must be a 0x-prefixed 20-byte hex address");
  return raw as `0x${string}`;
}

function privateKey(env: Env, name: string): `0x${string}` | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError(name, "must be a 0x-prefixed 32-byte hex private key");
  return raw as `0x${string}`;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(name, `must be one of ${allowed.join(", ")}, got "${raw}"`);
  return raw as T;
}

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === "production";
  const sandbox = boolean(env, "SANDBOX", !production);

  const host = text(env, "HOST") ?? "127.0.0.1";
  const databaseUrl = text(env, "DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL", "must be a postgres:// connection string");
  }

  const delaysRaw = text(env, "WEBHOOK_RETRY_DELAYS_SECONDS") ?? "30,120,600,1800,7200";
  const webhookRetryDelaysSeconds = delaysRaw.split(",").map((part) => {
    const trimmed = part.trim();
    if (!/^\d+$/.test(trimmed)) throw new ConfigError("WEBHOOK_RETRY_DELAYS_SECONDS", `must be comma-separated whole seconds, got "${delaysRaw}"`);
    return Number(trimmed);
  });

  const sandboxUsdMxn = text(env, "SANDBOX_USD_MXN") ?? "17.2500";
  if (!/^\d{1,4}(\.\d{1,6})?$/.test(sandboxUsdMxn) || Number(sandboxUsdMxn) <= 0) {
    throw new ConfigError("SANDBOX_USD_MXN", `must be a positive decimal rate, got "${sandboxUsdMxn}"`);
  }

  const config: Config = {
    port: integer(env, "PORT", 3000, 0, 65535),
    host,
    databaseUrl,
    dataDir: text(env, "DATA_DIR") ?? ".data",
    rpcUrl: url(env, "RPC_URL"),
    chainId: integer(env, "CHAIN_ID", 31337, 1, Number.MAX_SAFE_INTEGER),
    escrowAddress: address(env, "ESCROW_ADDRESS"),
    usdcAddress: address(env, "USDC_ADDRESS"),
    servicePrivateKey: privateKey(env, "SERVICE_PRIVATE_KEY"),
    arbiterPrivateKey: privateKey(env, "ARBITER_PRIVATE_KEY"),
    adminToken: text(env, "ADMIN_TOKEN"),
    sandbox,
    production,
    quoteTtlSeconds: integer(env, "QUOTE_TTL_SECONDS", 300, 1, 86400),
    rateValiditySeconds: integer(env, "RATE_VALIDITY_SECONDS", 300, 1, 86400),
    depositTimeoutSeconds: integer(env, "DEPOSIT_TIMEOUT_SECONDS", 1800, 1, 30 * 86400),
    listingTimeoutSeconds: integer(env, "LISTING_TIMEOUT_SECONDS", 86400, 1, 365 * 86400),
    lockWindowSeconds: integer(env, "LOCK_WINDOW_SECONDS", 86400, 1, 30 * 86400),
    webhookRetryDelaysSeconds,
    webhookTimeoutMs: integer(env, "WEBHOOK_TIMEOUT_MS", 10000, 1, 120000),
    webhookAllowPrivate: boolean(env, "WEBHOOK_ALLOW_PRIVATE", sandbox),
    trustProxy: boolean(env, "TRUST_PROXY", false),
    banxicoSieUrl: url(env, "BANXICO_SIE_URL"),
    banxicoToken: text(env, "BANXICO_TOKEN"),
    fallbackRateUrl: url(env, "FALLBACK_RATE_URL"),
    cepUrl: url(env, "CEP_URL"),
    kycProviderUrl: url(env, "KYC_PROVIDER_URL"),
    kycProviderApiKey: text(env, "KYC_PROVIDER_API_KEY"),
    kycProviderSecret: text(env, "KYC_PROVIDER_SECRET"),
    sandboxUsdMxn,
    chainConfirmations: integer(env, "CHAIN_CONFIRMATIONS", integer(env, "CHAIN_ID", 31337, 1, Number.MAX_SAFE_INTEGER) === 31337 ? 0 : 10, 0, 1000),
    indexerSchema: text(env, "INDEXER_SCHEMA"),
    sanctionsListFiles: [
      ...(text(env, "SANCTIONS_LIST_FILE") ?? "data/sanctions/sdn.csv").split(",").map((file) => file.trim()),
      ...(sandbox ? ["data/sanctions/sandbox-sdn.csv"] : []),
    ],
    logLevel: oneOf(env, "LOG_LEVEL", LOG_LEVELS, "info"),
  };

  if (!sandbox) {
    const required: [string, unknown][] = [
      ["DATABASE_URL", config.databaseUrl],
      ["RPC_URL", config.rpcUrl],
      ["ESCROW_ADDRESS", config.escrowAddress],
      ["USDC_ADDRESS", config.usdcAddress],
      ["SERVICE_PRIVATE_KEY", config.servicePrivateKey],
      ["ARBITER_PRIVATE_KEY", config.arbiterPrivateKey],
      ["ADMIN_TOKEN", config.adminToken],
      ["BANXICO_SIE_URL", config.banxicoSieUrl],
      ["BANXICO_TOKEN", config.banxicoToken],
      ["FALLBACK_RATE_URL", config.fallbackRateUrl],
      ["CEP_URL", config.cepUrl],
      ["KYC_PROVIDER_URL", config.kycProviderUrl],
      ["KYC_PROVIDER_API_KEY", config.kycProviderApiKey],
      ["KYC_PROVIDER_SECRET", config.kycProviderSecret],
    ];
    for (const [name, value] of required) {
      if (value === undefined) throw new ConfigError(name, "is required when SANDBOX is false");
    }
  }
  if (config.adminToken !== undefined && config.adminToken.length < 16) {
    throw new ConfigError("ADMIN_TOKEN", "must be at least 16 characters");
  }
  return config;
}
