// A PostgreSQL server on this machine is reached through its Unix-domain socket where it can be: the
// embedded server's URL names its socket (test/start/start.test.ts checks every part of `npm start` uses
// it), and the bench's stack rewrites a local server's TCP URL to its socket (docs/benchmarks.md, stop
// 65). The tests' fault-injecting fronts reach a server given either way. On an embedded server of the
// test's own, so the server is on this machine whatever TEST_DATABASE_URL names.
import assert from "node:assert/strict";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import pg from "pg";
import { createLogger } from "../../src/logger.ts";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/stack/embedded-postgres.ts";
import { throughLocalSocket } from "../support/database.ts";
import { startPgFront, statementLabel } from "../support/wire-count.ts";

const ADDRESS_QUERY = "SELECT inet_client_addr()::text AS address";

let work: string;
let server: EmbeddedDatabase;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), "offramp-socket-test-"));
  await chmod(work, 0o755); // as root, the server's user must enter it
  server = await startEmbeddedPostgres(path.join(work, "data"), createLogger("silent"));
});
after(async () => {
  await server?.stop();
  await rm(work, { recursive: true, force: true });
});

async function clientAddress(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ address: string | null }>(ADDRESS_QUERY)).rows[0]!.address;
  } finally {
    await client.end();
  }
}

/** The embedded server's URL with its TCP address (it also listens on 127.0.0.1) instead of its socket. */
function overTcp(url: string): string {
  const tcp = new URL(url);
  tcp.hostname = "127.0.0.1";
  return tcp.toString();
}

test("the embedded server's URL reaches it through its Unix-domain socket", async () => {
  assert.equal(decodeURIComponent(new URL(server.url).hostname), "/tmp");
  assert.equal(await clientAddress(server.url), null);
  assert.equal(await clientAddress(overTcp(server.url)), "127.0.0.1/32");
});

test("a local server's TCP URL is rewritten to its socket, with the same user, password and database", async () => {
  const rewritten = await throughLocalSocket(overTcp(server.url));
  assert.equal(rewritten, server.url);
  assert.equal(await clientAddress(rewritten), null);
});

test("a PostgreSQL front given the socket's URL passes a session through and counts its round trips", async () => {
  const front = await startPgFront(server.url);
  try {
    assert.equal(new URL(front.url).hostname, "127.0.0.1");
    assert.equal(await clientAddress(front.url), null, "the front's own upstream connection is the socket's");
    assert.equal(front.roundTrips.by.get(statementLabel(ADDRESS_QUERY)), 1);
  } finally {
    await front.close();
  }
});
