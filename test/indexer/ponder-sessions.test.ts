// Ponder's database sessions commit synchronously (patches/ponder+0.17.7.patch, utils/pg.js). Ponder 0.17
// set synchronous_commit off on every session it opens: a PostgreSQL crash then lost the transactions of
// its last few hundred milliseconds that it had already counted as done (found by the chaos runs: a
// block's rows missing, a reorganisation's revert undone).
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { repoRoot } from "../../src/paths.ts";
import { createTestDatabase } from "../support/database.ts";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database?.drop();
});

test("the sessions Ponder opens commit synchronously", async () => {
  const module = (await import(pathToFileURL(path.join(repoRoot, "node_modules/ponder/dist/esm/utils/pg.js")).href)) as {
    createPool: (config: { connectionString: string; max: number }, logger: unknown) => { query(text: string): Promise<{ rows: { synchronous_commit: string }[] }>; end(): Promise<void> };
  };
  const silent = { warn() {}, error() {}, info() {}, debug() {}, trace() {} };
  const pool = module.createPool({ connectionString: database.url, max: 1 }, silent);
  try {
    const { rows } = await pool.query("SHOW synchronous_commit");
    assert.deepEqual(rows, [{ synchronous_commit: "on" }]);
  } finally {
    await pool.end();
  }
});
