// A PostgreSQL server on this machine is reached through its Unix-domain socket where it can be: the
// embedded server's URL names its socket (test/start/start.test.ts checks every part of `npm start` uses
// it), and the bench's stack rewrites the local server's TCP URL to its socket (docs/benchmarks.md, stop
// 65). The tests' fault-injecting fronts reach a server given either way.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { createTestDatabase, TEST_SERVER_URL, throughLocalSocket } from "../support/database.ts";
import { startPgFront, statementLabel } from "../support/wire-count.ts";

const ADDRESS_QUERY = "SELECT inet_client_addr()::text AS address";

let database: { url: string; drop(): Promise<void> };
let socketUrl: string;

before(async () => {
  socketUrl = await throughLocalSocket(TEST_SERVER_URL);
  database = await createTestDatabase(socketUrl);
});
after(() => database.drop());

async function clientAddress(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ address: string | null }>(ADDRESS_QUERY)).rows[0]!.address;
  } finally {
    await client.end();
  }
}

test("the local test server is reached through its Unix-domain socket, in the database made on it too", async () => {
  assert.match(decodeURIComponent(new URL(socketUrl).hostname), /^\//);
  assert.equal(await clientAddress(socketUrl), null);
  assert.equal(await clientAddress(database.url), null);
});

test("a PostgreSQL front given the socket's URL passes a session through and counts its round trips", async () => {
  const front = await startPgFront(database.url);
  try {
    assert.equal(new URL(front.url).hostname, "127.0.0.1");
    assert.equal(await clientAddress(front.url), null, "the front's own upstream connection is the socket's");
    assert.equal(front.roundTrips.by.get(statementLabel(ADDRESS_QUERY)), 1);
  } finally {
    await front.close();
  }
});
