// Embedded servers started at the same moment (test files run side by side, `npm start` beside a test) each
// ask for a free port and may be handed the same one: the one that loses it starts again on another, and
// neither takes the other's server for its own.
import assert from "node:assert/strict";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { createLogger } from "../../src/logger.ts";
import { dataDirectoryAt, startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/stack/embedded-postgres.ts";

const started: EmbeddedDatabase[] = [];
const work: string[] = [];
after(async () => {
  await Promise.all(started.map((server) => server.stop()));
  await Promise.all(work.map((dir) => rm(dir, { recursive: true, force: true })));
});

test("two embedded servers started at once each answer on a port of their own, from their own data", async () => {
  const dirs = await Promise.all(
    [0, 1].map(async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "offramp-ports-test-"));
      await chmod(dir, 0o755); // as root, the server's user must enter it
      work.push(dir);
      return dir;
    }),
  );
  const servers = await Promise.all(dirs.map((dir) => startEmbeddedPostgres(path.join(dir, "data"), createLogger("silent"))));
  started.push(...servers);
  assert.notEqual(new URL(servers[0]!.url).port, new URL(servers[1]!.url).port);
  for (const server of servers) assert.equal(await dataDirectoryAt(server.url), server.databaseDir);
});
