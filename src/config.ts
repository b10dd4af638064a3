// Configuration is read from the environment once, at start, and validated into one typed object.
// A bad value stops start-up with a message naming the variable (decisions section 1).
import { privateKeyToAccount } from "viem/accounts";

/** The local Hardhat chain's id: the only chain the sandbox may run on (decisions section 19). */
export const LOCAL_CHAIN_ID = 31337;
/** The shortest admin token accepted outside the sandbox (decisions section 19). */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

export interface Config {
  port: number;
  host: string;
  /** Unset: an embedded PostgreSQL in DATA_DIR. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Unset: a local Hardhat node started by `npm start`. One or more endpoints, comma-separated, tried in order (src/chain/rpc-transport.ts). */
  rpcUrl: string | undefined;
  /**
   * RPC_WS_URL: a WebSocket endpoint of the same chain. The indexer subscribes to its new heads and no
   * longer polls for them; unset, it polls (and on the local chain `npm start` uses the node's own).
   */
  rpcWsUrl: string | undefined;
  /** PONDER_POLLING_INTERVAL_MS: how often the indexer asks for the head; unset, ponder.config.ts's default. */
  indexerPollingIntervalMs: number | undefined;
  /** PONDER_RPC_LANES: times each RPC_URL endpoint is given to the indexer; unset, ponder.config.ts's default. */
  indexerRpcLanes: number | undefined;
  chainId: number;
  escrowAddress: `0x${string}` | undefined;
  usdcAddress: `0x${string}` | undefined;
  servicePrivateKey: `0x${string}` | undefined;
  arbiterPrivateKey: `0x${string}` | undefined;
  /** Holder of the escrow's DEFAULT_ADMIN_ROLE (a multisig in production); required outside the sandbox. */
  adminAddress: `0x${string}` | undefined;
  /** Generated at start in sandbox when unset; required in production. */
  adminToken: string | undefined;
  sandbox: boolean;
  production: boolean;
  quoteTtlSeconds: number;
  rateValiditySeconds: number;
  depositTimeoutSeconds: number;
  listingTimeoutSeconds: number;
  lockWindowSeconds: number;
  /** BUYER_MAX_OPEN_LOCKS: locks (and unexpired lock permits) one market buyer may hold at once (decisions 17). */
  buyerMaxOpenLocks: number;
  /** BUYER_MAX_EXPIRED_LOCKS: unpaid lock expiries in 30 days that suspend a market buyer for 7 days (decisions 17). */
  buyerMaxExpiredLocks: number;
  webhookRetryDelaysSeconds: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  /**
   * WEBHOOK_CONCURRENCY_PER_ENDPOINT: attempts in flight at once to one partner's endpoint, per service
   * instance, so a slow partner holds at most this many while every other partner is still served.
   */
  webhookConcurrencyPerEndpoint: number;
  /** Proxies in front of the service (0: none): the client address is that many hops from the right of X-Forwarded-For. */
  trustProxy: number;
  /**
   * PUBLIC_URL: the origin buyers and members reach the service at (the Sign-In with Ethereum domain,
   * invitation links); unset, the address the API listens on (`http://HOST:PORT`).
   */
  publicUrl: string | undefined;
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
  /** How often the escrow's logs are read from the chain for events the indexer did not deliver (sync/escrow-reconciliation.ts). */
  chainReconcileIntervalSeconds: number;
  /** MAX_FEE_PER_GAS_GWEI: the highest max fee per gas the service signs, replacements included (decimal gwei); none on the local chain. */
  maxFeePerGasGwei: string | undefined;
  /** Ponder's schema; set by `npm start` for the indexer it runs, required when the indexer runs elsewhere. */
  indexerSchema: string | undefined;
  /** Sanctions lists in the OFAC SDN CSV format; sandbox adds data/sanctions/sandbox-sdn.csv. */
  sanctionsListFiles: string[];
  logLevel: string;
  /** SIGNER_MIN_BALANCE_ETH: below it a signing key's balance is reported low (decisions 1 and 7), in ETH. */
  signerMinBalanceEth: string;
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

/** `false` (or 0) or the number of proxies in front (decisions section 1). */
function proxyCount(env: Env, name: string): number {
  const raw = text(env, name);
  if (raw === undefined || /^(false|0)$/i.test(raw)) return 0;
  if (!/^\d+$/.test(raw) || Number(raw) > 10) {
    throw new ConfigError(name, `must be false or the number of proxies in front of the service (1, 2...), got "${raw}"`);
  }
  return Number(raw);
}

/** An absolute http(s) origin (`https://offramp.example`, a port allowed): nothing after the host, no credentials. */
function origin(env: Env, name: string): string | undefined {
  const raw = url(env, name);
  if (raw === undefined) return undefined;
  const parsed = new URL(raw);
  if (parsed.username || parsed.password || parsed.pathname !== "/" || parsed.search || parsed.hash) {
    throw new ConfigError(name, `must be an origin such as https://offramp.example (no path, query or credentials), got "${raw}"`);
  }
  return parsed.origin;
}

/** A positive amount of gwei with at most 9 decimals (whole wei). */
function gwei(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}(\.\d{1,9})?$/.test(raw) || !/[1-9]/.test(raw)) throw new ConfigError(name, `must be a positive number of gwei (at most 9 decimals), got "${raw}"`);
  return raw;
}

/**
 * Whether `raw` is an absolute URL of one of `protocols`: the rule for every URL here, and for the chain's
 * endpoints also in ponder.config.ts, which reads Ponder's own environment (PONDER_WS_URL).
 */
export function isUrlOf(raw: string, protocols: readonly string[]): boolean {
  return URL.canParse(raw) && protocols.includes(new URL(raw).protocol);
}

function url(env: Env, name: string, protocols: readonly string[] = ["http:", "https:"]): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!isUrlOf(raw, protocols)) throw new ConfigError(name, `must be an absolute ${protocols.map((protocol) => `${protocol}//`).join(" or ")} URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

/** One or more http(s) URLs, comma-separated (RPC_URL: endpoints with failover, decisions 7). */
function urlList(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  const urls = raw.split(",").map((part) => url({ [name]: part }, name));
  if (urls.some((entry) => entry === undefined)) throw new ConfigError(name, `must be one or more http(s) URLs, comma-separated, got "${raw}"`);
  return urls.join(",");
}

/** An optional whole number within bounds: unset stays unset, so the default lives with its user. */
function optionalInteger(env: Env, name: string, min: number, max: number): number | undefined {
  return text(env, name) === undefined ? undefined : integer(env, name, min, min, max);
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

/** A non-negative amount of ETH in decimal (at most 18 decimals). */
function ethAmount(env: Env, name: string, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (!/^\d{1,9}(\.\d{1,18})?$/.test(raw)) throw new ConfigError(name, `must be an amount of ETH such as 0.05, got "${raw}"`);
  return raw;
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
    rpcUrl: urlList(env, "RPC_URL"),
    rpcWsUrl: url(env, "RPC_WS_URL", ["ws:", "wss:"]),
    indexerPollingIntervalMs: optionalInteger(env, "PONDER_POLLING_INTERVAL_MS", 100, 3_600_000),
    indexerRpcLanes: optionalInteger(env, "PONDER_RPC_LANES", 1, 64),
    chainId: integer(env, "CHAIN_ID", LOCAL_CHAIN_ID, 1, Number.MAX_SAFE_INTEGER),
    escrowAddress: address(env, "ESCROW_ADDRESS"),
    usdcAddress: address(env, "USDC_ADDRESS"),
    servicePrivateKey: privateKey(env, "SERVICE_PRIVATE_KEY"),
    arbiterPrivateKey: privateKey(env, "ARBITER_PRIVATE_KEY"),
    adminAddress: address(env, "ADMIN_ADDRESS"),
    adminToken: text(env, "ADMIN_TOKEN"),
    sandbox,
    production,
    quoteTtlSeconds: integer(env, "QUOTE_TTL_SECONDS", 300, 1, 86400),
    rateValiditySeconds: integer(env, "RATE_VALIDITY_SECONDS", 300, 1, 86400),
    depositTimeoutSeconds: integer(env, "DEPOSIT_TIMEOUT_SECONDS", 1800, 1, 30 * 86400),
    listingTimeoutSeconds: integer(env, "LISTING_TIMEOUT_SECONDS", 86400, 1, 365 * 86400),
    lockWindowSeconds: integer(env, "LOCK_WINDOW_SECONDS", 86400, 1, 30 * 86400),
    buyerMaxOpenLocks: integer(env, "BUYER_MAX_OPEN_LOCKS", 3, 1, 1000),
    buyerMaxExpiredLocks: integer(env, "BUYER_MAX_EXPIRED_LOCKS", 2, 1, 1000),
    webhookRetryDelaysSeconds,
    webhookTimeoutMs: integer(env, "WEBHOOK_TIMEOUT_MS", 10000, 1, 120000),
    webhookAllowPrivate: boolean(env, "WEBHOOK_ALLOW_PRIVATE", sandbox),
    webhookConcurrencyPerEndpoint: integer(env, "WEBHOOK_CONCURRENCY_PER_ENDPOINT", 16, 1, 1000),
    trustProxy: proxyCount(env, "TRUST_PROXY"),
    publicUrl: origin(env, "PUBLIC_URL"),
    banxicoSieUrl: url(env, "BANXICO_SIE_URL"),
    banxicoToken: text(env, "BANXICO_TOKEN"),
    fallbackRateUrl: url(env, "FALLBACK_RATE_URL"),
    cepUrl: url(env, "CEP_URL"),
    kycProviderUrl: url(env, "KYC_PROVIDER_URL"),
    kycProviderApiKey: text(env, "KYC_PROVIDER_API_KEY"),
    kycProviderSecret: text(env, "KYC_PROVIDER_SECRET"),
    sandboxUsdMxn,
    chainConfirmations: integer(env, "CHAIN_CONFIRMATIONS", integer(env, "CHAIN_ID", LOCAL_CHAIN_ID, 1, Number.MAX_SAFE_INTEGER) === LOCAL_CHAIN_ID ? 0 : 10, 0, 1000),
    chainReconcileIntervalSeconds: integer(env, "CHAIN_RECONCILE_INTERVAL_SECONDS", 30, 1, 3600),
    maxFeePerGasGwei: gwei(env, "MAX_FEE_PER_GAS_GWEI"),
    indexerSchema: text(env, "INDEXER_SCHEMA"),
    sanctionsListFiles: [
      ...(text(env, "SANCTIONS_LIST_FILE") ?? "data/sanctions/sdn.csv").split(",").map((file) => file.trim()),
      ...(sandbox ? ["data/sanctions/sandbox-sdn.csv"] : []),
    ],
    logLevel: oneOf(env, "LOG_LEVEL", LOG_LEVELS, "info"),
    signerMinBalanceEth: ethAmount(env, "SIGNER_MIN_BALANCE_ETH", "0.05"),
  };

  if (!sandbox) {
    const required: [string, unknown][] = [
      ["DATABASE_URL", config.databaseUrl],
      ["RPC_URL", config.rpcUrl],
      ["ESCROW_ADDRESS", config.escrowAddress],
      ["USDC_ADDRESS", config.usdcAddress],
      ["SERVICE_PRIVATE_KEY", config.servicePrivateKey],
      ["ARBITER_PRIVATE_KEY", config.arbiterPrivateKey],
      ["ADMIN_ADDRESS", config.adminAddress],
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
  if (config.rpcWsUrl !== undefined && config.rpcUrl === undefined) {
    throw new ConfigError("RPC_WS_URL", "needs RPC_URL: it is another endpoint of that chain (the local node started without RPC_URL serves its own)");
  }
  if (sandbox && config.chainId !== LOCAL_CHAIN_ID) {
    throw new ConfigError("SANDBOX", `must be false on chain ${config.chainId}: the sandbox runs only on the local chain (CHAIN_ID ${LOCAL_CHAIN_ID})`);
  }
  if (config.chainId !== LOCAL_CHAIN_ID && config.maxFeePerGasGwei === undefined) {
    throw new ConfigError("MAX_FEE_PER_GAS_GWEI", `is required on chain ${config.chainId}: the most the service pays per gas when it replaces a stuck transaction`);
  }
  const minimumTokenLength = sandbox ? 16 : MIN_ADMIN_TOKEN_LENGTH;
  if (config.adminToken !== undefined && config.adminToken.length < minimumTokenLength) {
    throw new ConfigError("ADMIN_TOKEN", `must be at least ${minimumTokenLength} characters`);
  }
  if (!sandbox) requireDistinctKeys(env, config);
  return config;
}

/**
 * Outside the sandbox each role has its own key (decisions section 19): a leaked service key must not
 * also deploy, arbitrate or administer the escrow. Compared as addresses; the deployer's key is checked
 * when it is in the same environment (`npm run deploy` checks it too).
 */
function requireDistinctKeys(env: Env, config: Config): void {
  const holders: [string, string][] = [];
  const deployerKey = privateKey(env, "DEPLOYER_PRIVATE_KEY");
  if (deployerKey) holders.push(["DEPLOYER_PRIVATE_KEY", privateKeyToAccount(deployerKey).address]);
  if (config.servicePrivateKey) holders.push(["SERVICE_PRIVATE_KEY", privateKeyToAccount(config.servicePrivateKey).address]);
  if (config.arbiterPrivateKey) holders.push(["ARBITER_PRIVATE_KEY", privateKeyToAccount(config.arbiterPrivateKey).address]);
  if (config.adminAddress) holders.push(["ADMIN_ADDRESS", config.adminAddress]);
  for (let i = 0; i < holders.length; i++) {
    for (let j = i + 1; j < holders.length; j++) {
      const [first, firstAddress] = holders[i]!;
      const [second, secondAddress] = holders[j]!;
      if (firstAddress.toLowerCase() === secondAddress.toLowerCase()) {
        throw new ConfigError(second, `must not be the same account as ${first} outside the sandbox (${firstAddress})`);
      }
    }
  }
}
