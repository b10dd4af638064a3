// What `npm run chaos` runs and kills. The chain (a Hardhat node with the escrow and test USDC deployed)
// and the database (a fresh one on the PostgreSQL server of TEST_DATABASE_URL, or with `--faults postgres`
// on the harness's own server, which it kills too) belong to the harness and outlive everything else;
// with `--faults rpc` the service and the indexer reach the chain through two fault proxies (faults.ts); the Ponder indexer and the service (API and workers, src/cli/chaos/
// service-process.ts) are child processes it SIGKILLs at random moments and starts again on the same
// database, schema, chain and port.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, type WriteStream } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { compileContracts, defaultArtifactsDir, deployLocal, type Deployment } from "../../stack/deploy.ts";
import { freePort } from "../../stack/free-port.ts";
import type { ChainSettings } from "../../chain/escrow-gateway.ts";
import { startIndexer, type Indexer } from "../../stack/indexer-process.ts";
import { qualifiedTable } from "../../sync/indexer-tables.ts";
import { devAccounts, DEV_ACCOUNT, sandboxAccounts, startLocalChain, type LocalChain } from "../../stack/local-node.ts";
import { testUsdcAbi } from "../../chain/escrow-abi.ts";
import { createPublicClient, createWalletClient, http as viemHttp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { repoRoot } from "../../paths.ts";
import { serviceNodeFlags } from "../../stack/node-runtime.ts";
import { INTERVAL_MINING, startChaosPostgres, startIntervalMining, startRpcFaults, type ChaosPostgres, type FaultName, type RpcFaults } from "./faults.ts";
import { orphanWatchdogArgs } from "../../stack/orphan-watchdog.ts";

const serviceScript = path.join(repoRoot, "src/cli/chaos/service-process.ts");

/** The PostgreSQL server the harness creates its database on (the tests' server). */
export const SERVER_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export { freePort };

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A child the harness starts, kills (SIGKILL) and starts again. */
export interface Killable {
  name: "service" | "indexer";
  /** True between a finished start and the next kill or exit. */
  readonly up: boolean;
  readonly pid: number | undefined;
  start(): Promise<void>;
  /** SIGKILL, resolved once the process has exited. */
  kill(): Promise<void>;
  /** Clean stop (end of run). */
  stop(): Promise<void>;
  /** Exits the harness did not cause (crashes), with their code or signal. */
  readonly crashes: string[];
  /** Set by the harness: called when the child exits on its own. */
  onCrash?: (why: string) => void;
}

export interface ChaosStack {
  chain: LocalChain;
  deployment: Deployment;
  chainSettings: ChainSettings;
  databaseUrl: string;
  indexerSchema: string;
  /** The harness's own pool on the service's database (reads for waiting and checking). */
  pool: pg.Pool;
  serviceUrl: string;
  service: Killable;
  indexer: Killable;
  /** The harness's own PostgreSQL (`--faults postgres`). */
  postgres: ChaosPostgres | undefined;
  /** The fault proxies the service and the indexer reach the chain through (`--faults rpc`). */
  rpcFaults: RpcFaults | undefined;
  /** CHAIN_CONFIRMATIONS of the service (above 0 with `--faults interval`). */
  confirmations: number;
  close(options: { keepDatabase: boolean }): Promise<void>;
}

export interface StackOptions {
  /** The service's environment beyond the stack's own (timers, webhook delays, CEP_URL). */
  serviceEnv: Record<string, string>;
  adminToken: string;
  /** Directory for the children's logs. */
  logDir: string;
  log: (line: string) => void;
  /** Leave Ponder's lock to expire (25 s after its last heartbeat) instead of clearing it after a kill. */
  realIndexerLock: boolean;
  faults: Set<FaultName>;
  /** The fault proxies' random choices. */
  random: () => number;
  /**
   * How the indexer learns of new blocks: by polling over RPC_URL, or from the node's WebSocket as `npm start`
   * follows the local chain. The socket goes to the node itself (the fault proxies are HTTP); the blocks a
   * head announces are still fetched through them.
   */
  newHeads: NewHeads;
}

export const NEW_HEADS = ["poll", "websocket"] as const;
export type NewHeads = (typeof NEW_HEADS)[number];

async function createDatabase(serverUrl: string): Promise<{ url: string; name: string }> {
  const name = `offramp_chaos_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export async function startChaosStack(options: StackOptions): Promise<ChaosStack> {
  const { log } = options;
  const cleanups: (() => Promise<void>)[] = [];
  const unwind = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    if (!existsSync(path.join(defaultArtifactsDir, "contracts"))) await compileContracts({ quiet: true });
    const chain = await startLocalChain({ port: await freePort() });
    cleanups.push(() => chain.stop());
    const deployment = await deployLocal({ rpcUrl: chain.rpcUrl });
    // Every sandbox wallet gets a large USDC balance up front (from the deployer, whose nonces nothing
    // else uses), so a deposit needs no mint: fewer blocks, less of the chain clock's lead.
    const deployer = createWalletClient({ account: privateKeyToAccount(devAccounts[DEV_ACCOUNT.deployer].privateKey), transport: viemHttp(chain.rpcUrl) });
    const reader = createPublicClient({ transport: viemHttp(chain.rpcUrl) });
    for (const wallet of sandboxAccounts) {
      const hash = await deployer.writeContract({ address: deployment.usdcAddress, abi: testUsdcAbi, functionName: "mint", args: [wallet.address, 10n ** 15n], chain: null });
      await reader.waitForTransactionReceipt({ hash });
    }
    if (options.faults.has("interval")) await startIntervalMining(chain.rpcUrl);
    const rpcFaults = options.faults.has("rpc") ? await startRpcFaults(chain.rpcUrl, options.random) : undefined;
    if (rpcFaults) cleanups.push(() => rpcFaults.close());
    const stackRpcUrl = rpcFaults?.rpcUrl ?? chain.rpcUrl;
    const confirmations = options.faults.has("interval") ? INTERVAL_MINING.confirmations : 0;
    const postgres = options.faults.has("postgres") ? await startChaosPostgres(await freePort(), log) : undefined;
    if (postgres) cleanups.push(() => postgres.stop());
    const serverUrl = postgres?.serverUrl ?? SERVER_URL;
    const database = await createDatabase(serverUrl);
    let dropOnClose = true;
    // The harness's own server goes with its data; a kept database stays on it only while it runs.
    cleanups.push(() => (dropOnClose && !postgres ? dropDatabase(serverUrl, database.name) : Promise.resolve()));
    const pool = new pg.Pool({ connectionString: database.url, max: 6, application_name: "offramp-chaos" });
    pool.on("error", () => undefined); // idle sessions cut by a drop at the end
    cleanups.push(() => pool.end());
    log(`chain ${chain.rpcUrl}, escrow ${deployment.escrowAddress}, database ${database.name}`);

    const chainSettings: ChainSettings = {
      rpcUrl: chain.rpcUrl,
      chainId: deployment.chainId,
      escrowAddress: deployment.escrowAddress,
      usdcAddress: deployment.usdcAddress,
      servicePrivateKey: devAccounts[DEV_ACCOUNT.service].privateKey,
      arbiterPrivateKey: devAccounts[DEV_ACCOUNT.arbiter].privateKey,
    };
    const indexerSchema = `ponder_chaos_${randomBytes(4).toString("hex")}`;
    const indexer = indexerChild({
      databaseUrl: database.url,
      schema: indexerSchema,
      chainSettings: { ...chainSettings, rpcUrl: stackRpcUrl },
      deployment,
      pool,
      logFile: path.join(options.logDir, "indexer.log"),
      realLock: options.realIndexerLock,
      ...(options.faults.has("interval") ? { pollingIntervalMs: INTERVAL_MINING.pollingMs } : {}),
      ...(options.newHeads === "websocket" ? { newHeadsUrl: chain.wsUrl } : {}),
    });
    await indexer.start();
    cleanups.push(() => indexer.stop());

    const port = await freePort();
    const service = serviceChild({
      env: {
        ...options.serviceEnv,
        DATABASE_URL: database.url,
        INDEXER_SCHEMA: indexerSchema,
        RPC_URL: stackRpcUrl,
        CHAIN_CONFIRMATIONS: String(confirmations),
        CHAIN_ID: String(deployment.chainId),
        ESCROW_ADDRESS: deployment.escrowAddress,
        USDC_ADDRESS: deployment.usdcAddress,
        SERVICE_PRIVATE_KEY: chainSettings.servicePrivateKey,
        ARBITER_PRIVATE_KEY: chainSettings.arbiterPrivateKey,
        ADMIN_TOKEN: options.adminToken,
        PORT: String(port),
        HOST: "127.0.0.1",
      },
      logFile: path.join(options.logDir, "service.log"),
    });
    await service.start();
    cleanups.push(() => service.stop());

    return {
      chain,
      deployment,
      chainSettings,
      databaseUrl: database.url,
      indexerSchema,
      pool,
      serviceUrl: `http://127.0.0.1:${port}`,
      service,
      indexer,
      postgres,
      rpcFaults,
      confirmations,
      async close({ keepDatabase }) {
        dropOnClose = !keepDatabase;
        await unwind();
      },
    };
  } catch (error) {
    await unwind();
    throw error;
  }
}

function serviceChild(options: { env: Record<string, string>; logFile: string }): Killable {
  const logStream: WriteStream = createWriteStream(options.logFile, { flags: "a" });
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let up = false;
  let expectingExit = false;
  const crashes: string[] = [];
  const self: Killable = {
    name: "service",
    get up() {
      return up;
    },
    get pid() {
      return child?.pid;
    },
    crashes,
    async start() {
      expectingExit = false;
      const proc = spawn(process.execPath, ["--no-deprecation", ...orphanWatchdogArgs(), ...serviceNodeFlags(), serviceScript], {
        cwd: repoRoot,
        env: { ...process.env, ...options.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = proc;
      const killOnExit = () => proc.kill("SIGKILL");
      process.once("exit", killOnExit);
      let started = false;
      exited = new Promise<void>((resolve) => {
        proc.once("exit", (code, signal) => {
          process.removeListener("exit", killOnExit);
          up = false;
          if (!expectingExit && started) {
            const why = `service exited on its own (code ${code}, signal ${signal})`;
            crashes.push(why);
            self.onCrash?.(why);
          }
          resolve();
        });
      });
      const recent: string[] = [];
      const ready = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the service was not ready within 120 s:\n${recent.join("\n")}`)), 120_000);
        for (const stream of [proc.stdout!, proc.stderr!]) {
          createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
            logStream.write(`${line}\n`);
            recent.push(line);
            if (recent.length > 30) recent.shift();
            if (/^ready \S+/.test(line)) {
              clearTimeout(timer);
              resolve();
            }
          });
        }
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`the service exited before it was ready:\n${recent.join("\n")}`));
        });
      });
      try {
        await ready;
      } catch (error) {
        expectingExit = true;
        proc.kill("SIGKILL");
        await exited;
        throw error;
      }
      started = true;
      up = true;
    },
    async kill() {
      expectingExit = true;
      up = false;
      child?.kill("SIGKILL");
      await exited;
    },
    async stop() {
      expectingExit = true;
      up = false;
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child?.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(timer);
      }
      await new Promise<void>((resolve) => logStream.end(resolve));
    },
  };
  return self;
}

function indexerChild(options: {
  databaseUrl: string;
  schema: string;
  chainSettings: ChainSettings;
  deployment: Deployment;
  pool: pg.Pool;
  logFile: string;
  realLock: boolean;
  pollingIntervalMs?: number;
  newHeadsUrl?: string;
}): Killable {
  let indexer: Indexer | undefined;
  let up = false;
  let expectingExit = false;
  let killedBefore = false;
  const crashes: string[] = [];
  const self: Killable = {
    name: "indexer",
    get up() {
      return up;
    },
    get pid() {
      return indexer?.process.pid;
    },
    crashes,
    async start() {
      expectingExit = false;
      if (killedBefore && !options.realLock) {
        // Ponder keeps its schema locked until the killed process's heartbeat is 25 s old. The process
        // is gone (its exit was awaited), so the lock is released here, as its expiry would.
        await options.pool
          .query(`UPDATE ${qualifiedTable(options.schema, "_ponder_meta")} SET value = jsonb_set(value, '{is_locked}', '0') WHERE key = 'app'`)
          .catch(() => undefined);
      }
      const started = await startIndexer({
        databaseUrl: options.databaseUrl,
        schema: options.schema,
        rpcUrl: options.chainSettings.rpcUrl,
        chainId: options.deployment.chainId,
        escrowAddress: options.deployment.escrowAddress,
        startBlock: options.deployment.deploymentBlock,
        port: await freePort(),
        logFile: options.logFile,
        // Debug: the log then tells each reorganisation's common ancestor and the rows it reverted.
        logLevel: "debug",
        readyTimeoutMs: 180_000,
        ...(options.pollingIntervalMs === undefined ? {} : { pollingIntervalMs: options.pollingIntervalMs }),
        ...(options.newHeadsUrl === undefined ? {} : { newHeadsUrl: options.newHeadsUrl }),
      });
      indexer = started;
      up = true;
      void started.exited.then(({ code, signal }) => {
        up = false;
        if (!expectingExit && indexer === started) {
          const why = `indexer exited on its own (code ${code}, signal ${signal})`;
          crashes.push(why);
          self.onCrash?.(why);
        }
      });
    },
    async kill() {
      expectingExit = true;
      killedBefore = true;
      up = false;
      if (!indexer) return;
      indexer.process.kill("SIGKILL");
      await indexer.exited;
      await indexer.stop(); // closes its log stream; the process is gone
    },
    async stop() {
      expectingExit = true;
      up = false;
      await indexer?.stop();
    },
  };
  return self;
}
