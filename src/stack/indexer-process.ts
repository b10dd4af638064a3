// Runs the Ponder indexer (indexer/, config ../ponder.config.ts) as a child process: `ponder start
// --root indexer --schema <schema>`, with every setting passed in the environment, and waits until it
// answers ready on /ready. Checked against ponder 0.17.7 (its sources are in node_modules/ponder/src).
//
// What Ponder creates in PostgreSQL:
// - In the schema given with --schema, the tables themselves (no views; views only appear with
//   --views-schema, which is not used), columns in snake_case:
//     escrow_event: id text PK ('<chain id>-<block number>-<log index>'), chain_id integer,
//       block_number bigint, block_hash text, block_timestamp bigint (unix s), transaction_hash text,
//       transaction_index integer, log_index integer, address text, event_name text,
//       order_id text NULL (bytes32), args jsonb (decoded args by name; integers above 48 bits as
//       decimal strings, smaller ones (uint8/uint16) as JSON numbers). Every hex value, addresses
//       included, is lower-case. Indexes on (block_number, log_index), (order_id) and, for the
//       ReputationChanged events alone, (args->>'account', block_number, log_index) are created once the
//       backfill is done. The admin API's escrow view and reputations are read from these rows
//       (src/admin/orders.ts, src/sync/indexer-tables.ts `reputationSql`), not kept in tables of their own.
//     indexer_head: chain_id integer PK, block_number bigint, block_hash text, block_timestamp bigint.
// - Ponder's own objects in the same schema: _ponder_meta (key 'app': build_id, is_locked, is_ready,
//   heartbeat_at), _ponder_checkpoint (chain_name, chain_id, latest/safe/finalized_checkpoint as
//   75-digit strings, decodeCheckpoint below), the _reorg__<table> journals, the operation_id sequence
//   and live-query functions. The RPC cache is the shared ponder_sync schema (off on chain 31337).
//
// How changes appear to a reader:
// - Realtime blocks are indexed one block per transaction: its escrow_event rows and indexer_head move
//   together.
// - Reorg: in one transaction Ponder reverts every write of the orphaned blocks from its journals:
//   their escrow_event rows are DELETED (never updated), indexer_head returns to the common ancestor. The new branch's blocks are then
//   indexed as new rows (an id may come back with another block_hash and content).
// - Every start on an existing schema (clean restart included) first reverts, in one transaction,
//   everything above the finalized block, then re-indexes it: rows of unfinalized blocks vanish and
//   come back identical. indexer_head is reverted with them; _ponder_checkpoint.latest_checkpoint and
//   /status are not, so they must not be used to judge whether a row is missing (see readIndexerHead).
// - Final: blocks at or below finalized_checkpoint (head minus 30 blocks on chains Ponder has no
//   figure for, 31337 included) never change again.
// - Locking: a Ponder process holds the schema (heartbeat every 10 s). After a clean stop (SIGINT)
//   the next start proceeds at once; after SIGKILL it waits until the heartbeat is 25 s old.
// - Ponder refuses a schema written by a different build (config contracts, schema or handler files
//   changed): use a new schema per build and deployment, e.g. indexerSchemaName().
// - Patched (patches/ponder+0.17.7.patch, applied by `npm install`'s postinstall): Ponder runs a block's
//   transaction again when its COMMIT fails or its answer is lost, and its row cache kept the rows the
//   failed attempt had flushed, so the handlers' inserts took them for stored ones and the block was
//   committed without its events (test/indexer/indexer.test.ts; how, by all signs, a chaos run's kill
//   of PostgreSQL lost a DisputeResolved). The patch has the retry read its rows from the database
//   again. It also mends Ponder's following of the chain behind several endpoints, one lagging: a head
//   at or below its tip that is the block it holds at that height is stale, not a reorg (Ponder reverted
//   and re-indexed its last blocks at every such poll); a block under a known head that an endpoint
//   answers null for is asked again; a queued head superseded by one polled after it (another block at
//   its height or above) is skipped, not fetched by a hash a reorganisation may have removed (a minute of
//   retries each). And Ponder's sessions commit synchronously: it set synchronous_commit off, so a
//   PostgreSQL crash lost what it had committed in the last few hundred milliseconds and already counted
//   as done (a block's rows missing; a reorganisation's revert undone, the removed branch's rows beside the
//   new ones). Its sync store inserts the blocks, transactions, receipts and logs it fetches in one statement a
//   table, each column's values in one array, not as a multi-row VALUES list built by drizzle (a third of its CPU
//   in a backfill, and most of PostgreSQL's time on the insert); test/indexer/ponder-sync-inserts.test.ts checks
//   that the rows stored are drizzle's. startIndexer refuses to run an unpatched Ponder.
// - Also patched (patches/vite-node+1.0.2.patch): Ponder's build sent every module under an esm/ folder
//   through Vite, its own and graphql-yoga's included (420 at each start), though their packages are ES
//   modules Node imports as they are; now only the indexer's own files are built
//   (test/indexer/ponder-build-imports.test.ts).
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, readFileSync, readdirSync } from "node:fs";
import type { WriteStream } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { createPublicClient, type Address } from "viem";
import { chainTransport } from "../chain/rpc-transport.ts";
import { checkSchema } from "../sync/indexer-tables.ts";
import { repoRoot } from "../paths.ts";
import { LOCAL_CHAIN_ID } from "../config.ts";
import { orphanWatchdogArgs } from "./orphan-watchdog.ts";
import { withCompileCache } from "./node-runtime.ts";

const ponderBin = path.join(repoRoot, "node_modules/.bin/ponder");
/** The files of Ponder that patches/ponder+0.17.7.patch mends (see above), and the patch's mark in them. */
const PATCHED_FILES = ["internal/metrics.js", "rpc/index.js", "runtime/multichain.js", "runtime/realtime.js", "sync-realtime/index.js", "sync-store/index.js", "utils/pg.js"].map((file) => path.join(repoRoot, "node_modules/ponder/dist/esm", file));
const PATCH_MARK = "patches/ponder+0.17.7.patch";
export const indexerRoot = path.join(repoRoot, "indexer");

/**
 * A schema name for one indexed deployment: `<prefix>_<12 hex>` hashing the indexer's code (config,
 * schema, handlers, ABI), the chain, the escrow address, its start block and that block's hash.
 * Ponder refuses to reuse a schema written by a different build ("previously used by a different
 * Ponder app"), and a restarted local Hardhat node brings a new chain with the same id, address and
 * start block (its block hashes differ), whose rows must not mix with the old chain's. The consumer's
 * cursor is (block_number, log_index), so it stays valid when the schema changes.
 */
export async function indexerSchemaName(options: {
  rpcUrl: string;
  chainId: number;
  escrowAddress: Address;
  startBlock: number;
  prefix?: string;
}): Promise<string> {
  const client = createPublicClient({ transport: chainTransport(options.rpcUrl) });
  const blockHash = (await client.getBlock({ blockNumber: BigInt(options.startBlock) })).hash;
  if (typeof blockHash !== "string") throw new Error(`block ${options.startBlock} not found at ${options.rpcUrl}`);
  const hash = createHash("sha256");
  for (const file of indexerCodeFiles()) hash.update(readFileSync(file));
  hash.update(`${options.chainId}:${options.escrowAddress.toLowerCase()}:${options.startBlock}:${blockHash.toLowerCase()}`);
  return checkSchema(`${options.prefix ?? "ponder"}_${hash.digest("hex").slice(0, 12)}`);
}

function indexerCodeFiles(): string[] {
  const files = [
    path.join(repoRoot, "ponder.config.ts"),
    path.join(indexerRoot, "ponder.schema.ts"),
    path.join(repoRoot, "src/chain/escrow-abi.ts"),
  ];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(ts|js|mts|mjs)$/.test(entry.name)) files.push(full);
    }
  };
  walk(path.join(indexerRoot, "src"));
  return files;
}

/** Pino-compatible: a pino Logger fits. */
export interface IndexerLogger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface IndexerOptions {
  /** PostgreSQL the indexer writes to (the service's database). */
  databaseUrl: string;
  /** Schema of the indexer's tables (created if missing; at most 45 characters). */
  schema: string;
  rpcUrl: string;
  chainId: number;
  escrowAddress: Address;
  /** The escrow's deployment block. */
  startBlock: number;
  /** HTTP port of Ponder (/health, /ready, /status, /metrics, /graphql). */
  port: number;
  /** Listen address; default 127.0.0.1. */
  hostname?: string;
  /** Receives Ponder's log records (its JSON log lines); per-block messages go to debug. */
  logger?: IndexerLogger;
  /** Appends Ponder's raw output to this file. */
  logFile?: string;
  /** Lowest level forwarded to the logger; default "info" (Ponder itself logs at info or below). */
  logLevel?: "error" | "warn" | "info" | "debug" | "trace";
  /**
   * A WebSocket endpoint of the same chain: Ponder subscribes to its new heads (`eth_subscribe`) instead
   * of asking for the head every polling interval; it takes the first at once, then at most one a polling
   * interval (patched). After 9 failed connections in a row it falls back to polling.
   */
  newHeadsUrl?: string;
  /** Realtime polling interval; default 100 ms (Ponder's minimum) on chain 31337, else 1000 ms (ponder.config.ts). */
  pollingIntervalMs?: number;
  /** How many times each RPC endpoint is given to Ponder, each throttled by Ponder on its own; default 4 on chain 31337, else 1 (ponder.config.ts). */
  rpcLanes?: number;
  /** PostgreSQL connections Ponder may open; default 12. */
  poolMax?: number;
  /**
   * How long to wait for /ready; default 90 s. After an unclean stop Ponder waits for the previous
   * process's lock to expire (up to 25 s) before it starts.
   */
  readyTimeoutMs?: number;
  /** How long stop() waits after SIGINT before SIGKILL; default 10 s (Ponder allows itself 5 s). */
  stopTimeoutMs?: number;
}

export interface Indexer {
  /** Base URL of Ponder's HTTP server, e.g. http://127.0.0.1:42069. */
  url: string;
  schema: string;
  process: ChildProcess;
  /** Resolves when the process exits (also on a crash: Ponder exits 75 on errors a restart may fix). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGINT (see stop() in startIndexer), then SIGKILL after stopTimeoutMs; resolves once the process has exited. */
  stop(): Promise<void>;
}


/** Preloaded too: Ponder's own modules found without Node parsing their package's manifest again for each. */
const PACKAGE_MODULE_RESOLUTION = pathToFileURL(path.join(repoRoot, "src/stack/package-module-resolution.ts")).href;

/** Pino's level numbers. */
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 } as const;

/** Per-block messages that would flood the service's log at info level. */
const CHATTY = new Set(["Indexed block", "Finalized block", "Synced block", "Fetched block"]);

/** Starts `ponder start` for the escrow and resolves once it answers 200 on /ready. */
export async function startIndexer(options: IndexerOptions): Promise<Indexer> {
  const schema = checkSchema(options.schema);
  if (PATCHED_FILES.some((file) => !readFileSync(file, "utf8").includes(PATCH_MARK))) {
    throw new Error(`Ponder is not patched (${PATCH_MARK}): run npm install, whose postinstall applies it; unpatched, a block whose commit fails can be committed again without its events`);
  }
  const hostname = options.hostname ?? "127.0.0.1";
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
  // Node's compile cache, as the service's processes have it: Ponder's own modules are compiled once, not at every start.
  const env: NodeJS.ProcessEnv = withCompileCache({
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TZ: "UTC",
    NODE_ENV: "production",
    FORCE_COLOR: "0",
    NO_COLOR: "1",
    DATABASE_URL: options.databaseUrl,
    RPC_URL: options.rpcUrl,
    CHAIN_ID: String(options.chainId),
    ESCROW_ADDRESS: options.escrowAddress,
    ESCROW_START_BLOCK: String(options.startBlock),
    // Ponder's PORT env var wins over --port (and an .env.local would not override it).
    PORT: String(options.port),
    ...(options.newHeadsUrl === undefined ? {} : { PONDER_WS_URL: options.newHeadsUrl }),
    ...(options.pollingIntervalMs === undefined ? {} : { PONDER_POLLING_INTERVAL_MS: String(options.pollingIntervalMs) }),
    ...(options.rpcLanes === undefined ? {} : { PONDER_RPC_LANES: String(options.rpcLanes) }),
    ...(options.poolMax === undefined ? {} : { PONDER_DB_POOL_MAX: String(options.poolMax) }),
  });
  const args = [
    "--no-deprecation",
    "--import",
    PACKAGE_MODULE_RESOLUTION,
    ...orphanWatchdogArgs(),
    ponderBin,
    "start",
    "--root",
    indexerRoot,
    "--schema",
    schema,
    "--port",
    String(options.port),
    "--hostname",
    hostname,
    "--log-format",
    "json",
    "--log-level",
    // At least info: the wrapper needs Ponder's "Created HTTP server" record; quieter levels are
    // applied below when forwarding.
    options.logLevel === "debug" || options.logLevel === "trace" ? options.logLevel : "info",
  ];
  const forwardFrom = LEVELS[options.logLevel ?? "info"];
  // process.execPath: the pinned Node 24 (the bin's `#!/usr/bin/env node` could find an older one).
  // --no-deprecation: Ponder's pg usage prints a DeprecationWarning we can do nothing about.
  const child = spawn(process.execPath, args, { cwd: indexerRoot, env, stdio: ["ignore", "pipe", "pipe"] });
  if (child.pid === undefined) throw new Error("could not spawn ponder");

  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  // When this process exits without stop(), let Ponder shut down cleanly on its own (SIGINT). If this
  // process dies by SIGKILL, the watchdog in the child notices it has been orphaned.
  const killOnExit = () => child.kill("SIGINT");
  process.once("exit", killOnExit);

  let logFile: WriteStream | undefined;
  if (options.logFile !== undefined) logFile = createWriteStream(options.logFile, { flags: "a" });
  const recent: string[] = [];
  let resolvePort: (port: number) => void = () => {};
  const portPromise = new Promise<number>((resolve) => (resolvePort = resolve));

  const onLine = (line: string) => {
    logFile?.write(`${line}\n`);
    recent.push(line);
    if (recent.length > 60) recent.shift();
    let record: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(line);
      if (parsed !== null && typeof parsed === "object") record = parsed as Record<string, unknown>;
    } catch {
      // not a JSON log line (e.g. a stack trace printed by Node)
    }
    const message = typeof record?.msg === "string" ? record.msg : line;
    if (message === "Created HTTP server" && typeof record?.port === "number") resolvePort(record.port);
    const logger = options.logger;
    let level = typeof record?.level === "number" ? record.level : 30;
    // An idle local chain mines no block until a transaction comes: not worth a warning there.
    if (message === "No new block received within expected time" && options.chainId === LOCAL_CHAIN_ID) level = 20;
    if (logger === undefined || level < forwardFrom) return;
    const { level: _level, time: _time, msg: _msg, ...fields } = record ?? {};
    const context = { component: "ponder", schema, ...fields };
    if (level >= 50) logger.error(context, message);
    else if (level >= 40) logger.warn(context, message);
    else if (level >= 30 && !CHATTY.has(message)) logger.info(context, message);
    else logger.debug(context, message);
  };
  for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream, crlfDelay: Infinity }).on("line", onLine);

  const stop = async () => {
    process.removeListener("exit", killOnExit);
    if (exitInfo === undefined) {
      // SIGINT, not SIGTERM: the Vite dev server inside Ponder's build also listens to SIGTERM and
      // calls process.exit() at once, cutting Ponder's own shutdown short (the schema stays locked for
      // up to 25 s and the next start runs crash recovery). On SIGINT only Ponder's handler runs: it
      // unlocks the schema, closes its pools and exits within 5 s.
      child.kill("SIGINT");
      const timer = setTimeout(() => {
        if (exitInfo === undefined) child.kill("SIGKILL");
      }, stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    }
    await new Promise<void>((resolve) => (logFile === undefined ? resolve() : logFile.end(resolve)));
  };

  const failure = (why: string) => new Error(`ponder ${why}; last output:\n${recent.join("\n")}`);

  try {
    const deadline = Date.now() + readyTimeoutMs;
    const port = await raceExit(portPromise, exited, deadline, failure, "did not open its HTTP server");
    const host = hostname.includes(":") ? `[${hostname}]` : hostname;
    const url = `http://${host}:${port}`;
    for (;;) {
      if (exitInfo !== undefined) throw failure(`exited (code ${exitInfo.code}, signal ${exitInfo.signal}) before ready`);
      if (await isReady(url)) break;
      if (Date.now() > deadline) throw failure(`was not ready within ${readyTimeoutMs} ms`);
      await sleep(200);
    }
    return { url, schema, process: child, exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function raceExit<T>(
  promise: Promise<T>,
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
  deadline: number,
  failure: (why: string) => Error,
  what: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      exited.then(({ code, signal }) => {
        throw failure(`exited (code ${code}, signal ${signal}) before it was ready`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(failure(`${what} in time`)), Math.max(0, deadline - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function isReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Keeps an indexer running: Ponder exits on errors a restart may fix (code 75: its database killed or
 * restarted under it, say), and it is then started again, after a pause that doubles while starts keep
 * failing (an unclean exit leaves its schema locked for up to 25 s). `stop()` ends the supervision and
 * stops the process of the moment.
 */
export async function superviseIndexer(
  start: () => Promise<Indexer>,
  logger: { error(details: object, message: string): void },
  delays: { firstMs: number; maxMs: number } = { firstMs: 1_000, maxMs: 30_000 },
): Promise<{ current(): Indexer; stop(): Promise<void> }> {
  let stopped = false;
  let current = await start();
  const watch = (indexer: Indexer): void => {
    void indexer.exited.then(async ({ code, signal }) => {
      if (stopped) return;
      logger.error({ code, signal }, "the Ponder indexer exited; starting it again");
      for (let wait = delays.firstMs; !stopped; wait = Math.min(wait * 2, delays.maxMs)) {
        await sleep(wait);
        if (stopped) return;
        try {
          current = await start();
        } catch (error) {
          logger.error({ err: error }, "the Ponder indexer did not start again; retrying");
          continue;
        }
        if (stopped) await current.stop();
        else watch(current);
        return;
      }
    });
  };
  watch(current);
  return {
    current: () => current,
    async stop() {
      stopped = true;
      await current.stop();
    },
  };
}
