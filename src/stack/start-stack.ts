// The stack `npm start` runs (src/cli/start.ts relays signals to this process): everything in one
// process tree, on embedded defaults when nothing is configured.
//
//   1. configuration (src/config.ts); a bad value stops here with a message naming the variable
//   2. PostgreSQL: DATABASE_URL, or an embedded server with its data in DATA_DIR/postgres
//   3. chain: RPC_URL with ESCROW_ADDRESS/USDC_ADDRESS (or DATA_DIR/deployment.json), or a local Hardhat
//      node (port 8545, or a free one) with the escrow and a test USDC deployed afresh
//   4. the Ponder indexer (child process) in a schema of its own per deployment
//   5. the service: API, workers, sandbox simulators, escrow event consumer (src/main.ts)
//   6. sandbox only: the admin token and the demo partner, kept in DATA_DIR/sandbox.json
//
// SIGINT/SIGTERM stop them in the reverse order (service, Ponder, Hardhat, PostgreSQL) and exit 0; a
// second signal exits at once. Run by src/cli/start.ts in a process group of its own, so Ctrl-C in a
// terminal, which signals the whole foreground group, reaches the children only through that ordered
// shutdown; it may also be run directly (`node src/stack/start-stack.ts`). A restart keeps the database.
// A local chain is new on every start (a Hardhat node keeps its chain in memory): see
// forgetEarlierLocalChains.
import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { privateKeyToAccount } from "viem/accounts";
import { createPublicClient, type Address, type Hex } from "viem";
import { chainTransport } from "../chain/rpc-transport.ts";
import { compileContracts, deployLocal, readDeployment, type Deployment } from "./deploy.ts";
import type { ChainSettings } from "../chain/escrow-gateway.ts";
import { indexerSchemaName, startIndexer, superviseIndexer } from "./indexer-process.ts";
import { DEV_ACCOUNT, devAccounts, nodeRpc, startLocalChain } from "./local-node.ts";
import { ConfigError, loadConfig, type Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { createLogger, type Logger } from "../logger.ts";
import { startService, type RunningService } from "../main.ts";
import { hashApiKey } from "../partners/credentials.ts";
import { createPartner, findPartnerByKeyHash } from "../partners/partners.ts";
import { ensureDemoOwner, type DemoOwner } from "../dashboard/sandbox.ts";
import { generateAdminToken, readSandboxState, sandboxStateFile, writeSandboxState, type SandboxState } from "./sandbox-credentials.ts";
import { LOCAL_CHAIN_ID } from "../config.ts";

const LOCAL_CHAIN_PORT = 8545;
const DEMO_PARTNER = { name: "Demo Partner", tier: "GROWTH", kycModel: "PARTNER_MANAGED" } as const;
/** Orders past the deposit point and not finished: their escrows are on the chain they were made on. */
const PAST_DEPOSIT_OPEN_STATUSES = ["ACTIVE", "LOCKED", "PENDING_RELEASE", "DISPUTED"];

/** Thrown between start-up steps when a signal arrived meanwhile. */
class Interrupted extends Error {}

interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

interface ChainPlan {
  settings: ChainSettings;
  deployment: Deployment;
  /** True when this process started the chain (a fresh local Hardhat node). */
  local: boolean;
  /** Where the indexer hears of new blocks: RPC_WS_URL, or the local node's own WebSocket; unset, it polls. */
  newHeadsUrl: string | undefined;
}

/** `preferred` when nothing listens there, else a free port the system picks. */
async function availablePort(preferred: number, host: string): Promise<number> {
  const listenOn = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(port, host, () => {
        const { port: chosen } = server.address() as net.AddressInfo;
        server.close(() => resolve(chosen));
      });
    });
  return listenOn(preferred).catch(() => listenOn(0));
}

const addressOf = (key: Hex): Address => privateKeyToAccount(key).address;

/** The service's and arbiter's keys: configured, else (on a local chain only) the development accounts. */
function signingKeys(config: Config, chainId: number): { service: Hex; arbiter: Hex } {
  const fallback = (variable: string, index: number): Hex => {
    if (chainId === LOCAL_CHAIN_ID) return devAccounts[index]!.privateKey;
    throw new ConfigError(variable, `is required on chain ${chainId} (development accounts are used on chain ${LOCAL_CHAIN_ID} only)`);
  };
  return {
    service: config.servicePrivateKey ?? fallback("SERVICE_PRIVATE_KEY", DEV_ACCOUNT.service),
    arbiter: config.arbiterPrivateKey ?? fallback("ARBITER_PRIVATE_KEY", DEV_ACCOUNT.arbiter),
  };
}

/** A fresh local Hardhat node with the escrow and a test USDC deployed; DATA_DIR/deployment.json written. */
async function startLocalSandboxChain(config: Config, logger: Logger, started: Stoppable[], checkpoint: () => void): Promise<ChainPlan> {
  await compileContracts();
  checkpoint();
  const port = await availablePort(LOCAL_CHAIN_PORT, "127.0.0.1");
  if (port !== LOCAL_CHAIN_PORT) logger.warn({ port }, `port ${LOCAL_CHAIN_PORT} is taken: the local chain listens on ${port}`);
  const chain = await startLocalChain({ port, logRequests: logger.isLevelEnabled("trace"), onLog: (line) => logger.trace({ component: "hardhat" }, line) });
  started.push({ name: "Hardhat node", stop: () => chain.stop() });
  checkpoint();
  const keys = signingKeys(config, chain.chainId);
  // Configured keys hold no ether on a fresh node: give them some, as the development accounts have.
  for (const key of [keys.service, keys.arbiter]) {
    if (!devAccounts.some((account) => account.privateKey.toLowerCase() === key.toLowerCase())) {
      await nodeRpc(chain.rpcUrl, "hardhat_setBalance", [addressOf(key), "0x21e19e0c9bab2400000"]); // 10,000 ETH
    }
  }
  const deployment = await deployLocal({
    rpcUrl: chain.rpcUrl,
    service: addressOf(keys.service),
    arbiter: addressOf(keys.arbiter),
    deploymentFile: path.join(config.dataDir, "deployment.json"),
  });
  logger.info({ rpcUrl: chain.rpcUrl, ...deployment }, "local chain started and contracts deployed");
  return {
    local: true,
    newHeadsUrl: chain.wsUrl,
    deployment,
    settings: {
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      escrowAddress: deployment.escrowAddress,
      usdcAddress: deployment.usdcAddress,
      servicePrivateKey: keys.service,
      arbiterPrivateKey: keys.arbiter,
    },
  };
}

/** A chain given by RPC_URL: contracts from ESCROW_ADDRESS/USDC_ADDRESS or DATA_DIR/deployment.json. */
async function configuredChain(config: Config, rpcUrl: string, logger: Logger): Promise<ChainPlan> {
  const chainId = await createPublicClient({ transport: chainTransport(rpcUrl) }).getChainId();
  if (chainId !== config.chainId) throw new ConfigError("CHAIN_ID", `is ${config.chainId} but RPC_URL answers chain id ${chainId}`);
  const deploymentFile = path.join(config.dataDir, "deployment.json");
  const fromFile = await readDeployment(deploymentFile).catch(() => undefined);
  let deployment: Deployment;
  if (config.escrowAddress !== undefined || config.usdcAddress !== undefined) {
    if (config.escrowAddress === undefined) throw new ConfigError("ESCROW_ADDRESS", "is required when USDC_ADDRESS is set");
    if (config.usdcAddress === undefined) throw new ConfigError("USDC_ADDRESS", "is required when ESCROW_ADDRESS is set");
    const sameEscrow = fromFile !== undefined && fromFile.chainId === chainId && fromFile.escrowAddress.toLowerCase() === config.escrowAddress.toLowerCase();
    if (!sameEscrow) logger.warn({ deploymentFile }, "no deployment file for ESCROW_ADDRESS: the indexer reads the chain from block 0");
    deployment = {
      chainId,
      escrowAddress: config.escrowAddress,
      usdcAddress: config.usdcAddress,
      deploymentBlock: sameEscrow ? fromFile.deploymentBlock : 0,
      deployedAt: sameEscrow ? fromFile.deployedAt : new Date(0).toISOString(),
    };
  } else if (fromFile !== undefined) {
    if (fromFile.chainId !== chainId) throw new Error(`${deploymentFile} is for chain ${fromFile.chainId}, but RPC_URL answers chain id ${chainId}`);
    deployment = fromFile;
  } else {
    throw new ConfigError("ESCROW_ADDRESS", `and USDC_ADDRESS are required with RPC_URL (or a ${deploymentFile} written by \`npm run deploy\`)`);
  }
  const keys = signingKeys(config, chainId);
  return {
    local: false,
    newHeadsUrl: config.rpcWsUrl,
    deployment,
    settings: {
      rpcUrl,
      chainId,
      escrowAddress: deployment.escrowAddress,
      usdcAddress: deployment.usdcAddress,
      servicePrivateKey: keys.service,
      arbiterPrivateKey: keys.arbiter,
    },
  };
}

/** The demo partner of sandbox.json while its key still works, else a new one (first start, or a wiped database). */
async function demoPartner(pool: Pool, state: SandboxState, logger: Logger): Promise<{ id: string; apiKey: string; webhookSecret: string }> {
  const stored = state.demoPartner;
  if (stored !== undefined) {
    const partner = await findPartnerByKeyHash(pool, hashApiKey(stored.apiKey));
    if (partner !== undefined && partner.id === stored.id) {
      if (partner.status !== "ACTIVE" || partner.kybStatus !== "APPROVED") {
        logger.warn({ partnerId: partner.id, status: partner.status, kybStatus: partner.kybStatus }, "the demo partner is not active: its requests are refused");
      }
      return { ...stored, webhookSecret: partner.webhookSecret };
    }
    logger.warn({ partnerId: stored.id }, "the stored demo partner's key no longer works (database wiped or key rotated): creating a new demo partner");
  }
  const created = await createPartner(pool, DEMO_PARTNER);
  return { id: created.partner.id, apiKey: created.apiKey, webhookSecret: created.webhookSecret };
}

/**
 * A local chain is new on every start, but the database is kept. Before the indexer and the service
 * start, the previous chain's indexer schema and its consumer cursor are dropped: that chain is gone
 * (with INDEXER_SCHEMA set this is the same schema, which Ponder then rebuilds for the new chain).
 * Applied escrow events are keyed by block hash (src/sync/escrow-events.ts), so the new chain's events,
 * which reuse the old block numbers, are never taken for replays.
 * The escrow and USDC land at the same addresses each time (same deployer, same nonces), so an order
 * still PENDING_DEPOSIT keeps working: its signed terms are valid on the new chain and the seller can
 * still deposit. Orders past the deposit point refer to escrows the new chain does not have: they stay
 * as they are (their timers find no such escrow on chain and send nothing) and are listed in the log.
 */
async function forgetEarlierLocalChains(databaseUrl: string, previousSchema: string | undefined, logger: Logger): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const exists = async (table: string) => (await client.query<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [table])).rows[0]!.found;
    if (previousSchema !== undefined && /^[a-z_][a-z0-9_]{0,44}$/.test(previousSchema)) {
      await client.query(`DROP SCHEMA IF EXISTS "${previousSchema}" CASCADE`);
      if (await exists("chain_cursor")) await client.query("DELETE FROM chain_cursor WHERE name = $1", [previousSchema]);
      if (await exists("chain_reconciliation")) await client.query("DELETE FROM chain_reconciliation WHERE indexer_schema = $1", [previousSchema]);
      logger.info({ schema: previousSchema }, "dropped the indexer schema of the previous local chain");
    }
    if (await exists("orders")) {
      // Bounded whatever the table holds (issue 24: start-up must not grow with the data): 50 examples
      // through the status index, and the number from the counters kept with every order change.
      const { rows } = await client.query<{ id: string; status: string }>("SELECT id, status FROM orders WHERE status = ANY($1::text[]) LIMIT 50", [PAST_DEPOSIT_OPEN_STATUSES]);
      if (rows.length > 0) {
        const counted = (await exists("order_counts"))
          ? Number((await client.query<{ n: string }>("SELECT coalesce(sum(count), 0) AS n FROM order_counts WHERE status = ANY($1::text[])", [PAST_DEPOSIT_OPEN_STATUSES])).rows[0]!.n)
          : undefined;
        logger.warn(
          { count: counted ?? `${rows.length} or more`, orders: rows.map((row) => `${row.id} ${row.status}`) },
          "orders from an earlier local chain: their escrows do not exist on this chain, so they stay in their state (delete DATA_DIR for a clean slate)",
        );
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * Stops the embedded server, or waits for the postmaster of postmaster.pid to be gone, whichever comes
 * first (a server started by an earlier version of this code may outlive its child process handle).
 */
async function stopEmbedded(database: { stop(): Promise<void> }, databaseDir: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(databaseDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return; // no postmaster.pid: the server has already shut down
  }
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const gone = async () => {
    while (alive()) await sleep(100);
  };
  await Promise.race([database.stop(), gone()]);
}

function redactedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password !== "") parsed.password = "***";
  return parsed.toString();
}

function ponderLogLevel(level: string): "error" | "warn" | "info" | "debug" | "trace" {
  return level === "debug" || level === "trace" || level === "warn" || level === "info" ? level : "error";
}

interface Banner {
  config: Config;
  service: RunningService;
  adminToken: string;
  adminTokenSource: string;
  demo: { id: string; apiKey: string; webhookSecret: string } | undefined;
  demoOwner: DemoOwner | undefined;
  chain: ChainPlan;
  indexer: { url: string; schema: string };
  database: string;
}

function banner(b: Banner): string {
  const base = b.service.baseUrl;
  const rows: [string, string][] = [
    ["API base URL", `${base}/api/v1`],
    ["API reference", `${base}/docs`],
    ["Operator console", `${base}/admin`],
    ["Partner dashboard", `${base}/dashboard`],
    ["Buyer market", `${base}/market  (API ${base}/market/v1/openapi.json)`],
    ["Admin token", `${b.adminToken}  (${b.adminTokenSource})`],
  ];
  if (b.demo !== undefined) {
    rows.push(
      ["Demo partner", `${DEMO_PARTNER.name} ${b.demo.id} (${DEMO_PARTNER.tier}, ${DEMO_PARTNER.kycModel})`],
      ["Demo API key", b.demo.apiKey],
      ["Webhook secret", b.demo.webhookSecret],
    );
  }
  if (b.demoOwner !== undefined) {
    rows.push(["Demo owner", `${b.demoOwner.email}  (dashboard OWNER of the demo partner)`], ["Owner password", b.demoOwner.password]);
  }
  rows.push(
    ["Chain RPC", `${b.chain.settings.rpcUrl}  (chain id ${b.chain.settings.chainId}${b.chain.local ? ", local Hardhat node, new on every start" : ""})`],
    ["Escrow", b.chain.settings.escrowAddress],
    ["USDC", `${b.chain.settings.usdcAddress}${b.chain.local ? "  (test token)" : ""}`],
    ["Indexer", `${b.indexer.url}  (schema ${b.indexer.schema})`],
    ["Database", b.database],
    ["Data directory", path.resolve(b.config.dataDir)],
  );
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const key = b.demo?.apiKey ?? "<partner API key>";
  return [
    "",
    `Offramp ${b.config.sandbox ? "sandbox" : "service"} is running`,
    "",
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}${value}`),
    "",
    "Try it:",
    `  curl -H 'X-API-Key: ${key}' ${base}/api/v1/health`,
    "",
    "Stop with Ctrl-C (SIGINT) or SIGTERM.",
    "",
  ].join("\n");
}

function configOrExit(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** What was started, stopped in reverse order on a signal or a failed start-up; a second signal exits at once. */
interface Lifecycle {
  started: Stoppable[];
  /** Throws Interrupted once a signal came during start-up. */
  checkpoint(): void;
  interrupted(): boolean;
  /** Start-up is done: a signal now stops everything and exits. */
  ready(): void;
  stopAll(): Promise<boolean>;
}

function lifecycle(logger: Logger): Lifecycle {
  const started: Stoppable[] = [];
  let ready = false;
  let interrupted = false;
  let signals = 0;

  const stopAll = async (): Promise<boolean> => {
    if (started.length === 0) return true;
    let clean = true;
    const begin = performance.now();
    for (const part of started.reverse()) {
      const t0 = performance.now();
      try {
        await part.stop();
        logger.info({ ms: Math.round(performance.now() - t0) }, `stopped ${part.name}`);
      } catch (error) {
        clean = false;
        logger.error({ err: error }, `stopping ${part.name} failed`);
      }
    }
    started.length = 0;
    logger.info({ ms: Math.round(performance.now() - begin) }, "shut down");
    return clean;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(130);
    }
    logger.info({ signal }, "stopping (signal again to force)");
    interrupted = true;
    if (ready) void stopAll().then((clean) => process.exit(clean ? 0 : 1));
  };
  process.on("SIGINT", onSignal).on("SIGTERM", onSignal).on("SIGHUP", onSignal);
  watchRelay(onSignal);
  return {
    started,
    checkpoint: () => {
      if (interrupted) throw new Interrupted();
    },
    interrupted: () => interrupted,
    ready: () => {
      ready = true;
    },
    stopAll,
  };
}

/** DATABASE_URL, or an embedded PostgreSQL with its data in DATA_DIR. */
async function startDatabase(config: Config, logger: Logger, life: Lifecycle): Promise<{ url: string; shown: string }> {
  if (config.databaseUrl !== undefined) return { url: config.databaseUrl, shown: redactedUrl(config.databaseUrl) };
  const { startEmbeddedPostgres } = await import("./embedded-postgres.ts");
  const database = await startEmbeddedPostgres(config.dataDir, logger);
  life.started.push({ name: "embedded PostgreSQL", stop: () => stopEmbedded(database, database.databaseDir) });
  return { url: database.url, shown: `${database.url}  (embedded, data in ${database.databaseDir})` };
}

/** The Ponder indexer over the deployment, in its schema (INDEXER_SCHEMA or one named after the deployment). */
async function startDeploymentIndexer(config: Config, logger: Logger, life: Lifecycle, databaseUrl: string, chain: ChainPlan, state: SandboxState) {
  const { settings, deployment } = chain;
  const schema = config.indexerSchema ?? (await indexerSchemaName({ rpcUrl: settings.rpcUrl, chainId: settings.chainId, escrowAddress: settings.escrowAddress, startBlock: deployment.deploymentBlock }));
  if (chain.local) await forgetEarlierLocalChains(databaseUrl, state.localChainSchema, logger);
  const indexerPort = config.port === 0 ? await availablePort(0, config.host) : await availablePort(config.port + 1, config.host);
  const supervised = await superviseIndexer(() => startIndexer({
    databaseUrl,
    schema,
    rpcUrl: settings.rpcUrl,
    ...(chain.newHeadsUrl === undefined ? {} : { newHeadsUrl: chain.newHeadsUrl }),
    ...(config.indexerPollingIntervalMs === undefined ? {} : { pollingIntervalMs: config.indexerPollingIntervalMs }),
    ...(config.indexerRpcLanes === undefined ? {} : { rpcLanes: config.indexerRpcLanes }),
    chainId: settings.chainId,
    escrowAddress: settings.escrowAddress,
    startBlock: deployment.deploymentBlock,
    port: indexerPort,
    hostname: config.host,
    logger,
    logLevel: ponderLogLevel(config.logLevel),
  }), logger);
  life.started.push({ name: "Ponder indexer", stop: () => supervised.stop() });
  return { indexer: supervised.current(), schema };
}

/** In sandbox: the demo partner and its dashboard owner, and what the next start reuses (DATA_DIR). */
async function rememberSandbox(config: Config, logger: Logger, service: RunningService, state: SandboxState, kept: { adminToken: string; localChainSchema: string | undefined }) {
  const demo = await demoPartner(service.pool, state, logger);
  const demoOwner = await ensureDemoOwner(service.pool, demo.id, state.demoOwner);
  const next: SandboxState = { ...state, demoPartner: demo, demoOwner };
  if (config.adminToken === undefined) next.adminToken = kept.adminToken;
  if (kept.localChainSchema !== undefined) next.localChainSchema = kept.localChainSchema;
  await writeSandboxState(config.dataDir, next);
  return { demo, demoOwner };
}

async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config.logLevel);
  const life = lifecycle(logger);
  const { checkpoint } = life;
  try {
    await mkdir(config.dataDir, { recursive: true });
    const state: SandboxState = config.sandbox ? await readSandboxState(config.dataDir) : {};
    const database = await startDatabase(config, logger, life);
    checkpoint();

    const chain = config.rpcUrl === undefined
      ? await startLocalSandboxChain(config, logger, life.started, checkpoint)
      : await configuredChain(config, config.rpcUrl, logger);
    checkpoint();

    const { indexer, schema } = await startDeploymentIndexer(config, logger, life, database.url, chain, state);
    checkpoint();

    const generated = config.adminToken === undefined && config.sandbox && state.adminToken === undefined;
    const adminToken = config.adminToken ?? state.adminToken ?? generateAdminToken();
    const service = await startService({ config, databaseUrl: database.url, adminToken, logger, chain: chain.settings, indexerSchema: schema });
    life.started.push({ name: "API and workers", stop: () => service.stop() });
    checkpoint();

    const sandbox = config.sandbox ? await rememberSandbox(config, logger, service, state, { adminToken, localChainSchema: chain.local ? schema : undefined }) : undefined;
    checkpoint();

    const stateFile = sandboxStateFile(config.dataDir);
    process.stdout.write(
      banner({
        config,
        service,
        // Outside the sandbox the token is the operator's secret: it is not printed.
        adminToken: config.sandbox ? adminToken : "(ADMIN_TOKEN)",
        adminTokenSource: config.adminToken !== undefined ? "from ADMIN_TOKEN" : generated ? `generated, kept in ${stateFile}` : `kept in ${stateFile}`,
        demo: sandbox?.demo,
        demoOwner: sandbox?.demoOwner,
        chain,
        indexer: { url: indexer.url, schema },
        database: database.shown,
      }),
    );
    life.ready();
  } catch (error) {
    if (error instanceof Interrupted) {
      logger.info("interrupted during start-up");
      process.exit((await life.stopAll()) ? 0 : 1);
    }
    if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else logger.fatal({ err: error }, "start-up failed");
    await life.stopAll();
    process.exit(1);
  }
}

/** Set by src/cli/start.ts, which relays signals to this process: the relay's process id. */
const RELAY_PID = "OFFRAMP_START_RELAY_PID";

/** Under the relay: stop in order when the relay is gone (even killed by SIGKILL). */
function watchRelay(stop: (signal: NodeJS.Signals) => void): void {
  const relay = Number(process.env[RELAY_PID]);
  if (!Number.isSafeInteger(relay) || relay <= 0) return;
  const timer = setInterval(() => {
    if (process.ppid !== relay) {
      clearInterval(timer);
      stop("SIGTERM");
    }
  }, 1_000);
  timer.unref();
}

await main();
