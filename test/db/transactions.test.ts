// The service's transactions (src/db/pool.ts `withTransaction`) on pipelined sessions: BEGIN goes on the
// wire with the first statement instead of a round trip of its own, in the same write, and still nothing
// runs outside the transaction when it fails; a session whose rollback failed never goes back to the pool.
// Counted on the wire by the test fronts (test/support/wire-count.ts), and the session's socket writes
// counted where the session makes them, on a database of the test's own.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type net from "node:net";
import { allAnswered, createPool, sessionSocket, withTransaction, type Pool, type PoolClient } from "../../src/db/pool.ts";
import { createTestDatabase } from "../support/database.ts";
import { startPgFront, type PgFront } from "../support/wire-count.ts";

let database: { url: string; drop(): Promise<void> };
let front: PgFront;
let pool: Pool;

before(async () => {
  database = await createTestDatabase();
  front = await startPgFront(database.url);
  pool = createPool(front.url, 1);
  await pool.query("CREATE TABLE entries (id int PRIMARY KEY)");
});
after(async () => {
  await pool?.end();
  await front?.close();
  await database?.drop();
});

/**
 * Counts the writes `session`'s socket makes (each a system call for the service and a wake-up for
 * PostgreSQL): a stream's `_write` or, for several chunks let out at once, `_writev`.
 */
function countWrites(session: PoolClient): { readonly count: number } {
  const socket = sessionSocket(session) as net.Socket & Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
  const counter = { count: 0 };
  for (const method of ["_write", "_writev"] as const) {
    const original = socket[method];
    socket[method] = function (this: net.Socket, ...args: unknown[]) {
      counter.count += 1;
      return original.apply(this, args);
    };
  }
  return counter;
}

async function entries(): Promise<number[]> {
  const { rows } = await pool.query<{ id: number }>("SELECT id FROM entries ORDER BY id");
  return rows.map((row) => row.id);
}

test("a transaction's BEGIN travels with its first statement: one statement and its commit are two round trips", async () => {
  await pool.query("SELECT 1"); // the session is open before counting
  front.reset();
  await withTransaction(pool, (tx) => tx.query("INSERT INTO entries VALUES (1)"));
  assert.deepEqual([...front.statements.by.keys()], ["BEGIN", "INSERT entries", "COMMIT"]);
  assert.equal(front.roundTrips.total, 2);
  assert.deepEqual([...front.roundTrips.by.keys()], ["BEGIN", "COMMIT"]);
  assert.deepEqual(await entries(), [1]);
});

test("a transaction's BEGIN and its first statement leave in one write, its COMMIT in another", async () => {
  const session = await pool.connect();
  const writes = countWrites(session);
  session.release();
  try {
    await withTransaction(pool, (tx) => tx.query("INSERT INTO entries VALUES ($1)", [11]));
    assert.equal(writes.count, 2);
  } finally {
    await pool.query("DELETE FROM entries WHERE id = 11");
  }
});

test("statements sent together on a session leave in one write", async () => {
  const session = await pool.connect();
  try {
    const writes = countWrites(session);
    const [first, second, third] = await allAnswered([session.query("SELECT 1 AS n"), session.query("SELECT $1::int AS n", [2]), session.query("SELECT $1::int AS n", [3])]);
    assert.deepEqual([first.rows[0].n, second.rows[0].n, third.rows[0].n], [1, 2, 3]);
    assert.equal(writes.count, 1);
    // A statement sent after the answers came back is a write of its own.
    await session.query("SELECT 4");
    assert.equal(writes.count, 2);
  } finally {
    session.release();
  }
});

test("a transaction whose work fails leaves nothing it wrote", async () => {
  await assert.rejects(
    withTransaction(pool, async (tx) => {
      await tx.query("INSERT INTO entries VALUES (2)");
      throw new Error("refused");
    }),
    /refused/,
  );
  assert.deepEqual(await entries(), [1]);
});

test("a failed BEGIN fails its transaction with its own error, and the statement sent behind it does not run", async () => {
  // A session handed back with its transaction aborted (what a careless caller could leave): its BEGIN fails.
  const session = await pool.connect();
  await session.query("BEGIN");
  await session.query("SELECT 1 / 0").catch(() => undefined);
  session.release();
  await assert.rejects(
    withTransaction(pool, (tx) => tx.query("INSERT INTO entries VALUES (3)")),
    (error: { code?: string; message?: string }) => error.code === "25P02" && /current transaction is aborted/.test(String(error.message)),
  );
  // The rollback ended the aborted transaction: the session is sound again, and nothing was written.
  assert.deepEqual(await entries(), [1]);
  await withTransaction(pool, (tx) => tx.query("INSERT INTO entries VALUES (4)"));
  assert.deepEqual(await entries(), [1, 4]);
});

test("a session whose rollback failed is closed, not handed out again", async () => {
  const session = await pool.connect();
  const pid = (await session.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  // Its ROLLBACK refused once, as a session that lost its way in the protocol would.
  const query = session.query.bind(session) as (...args: unknown[]) => Promise<unknown>;
  (session as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) =>
    args[0] === "ROLLBACK" ? Promise.reject(new Error("rollback refused")) : query(...args);
  session.release();
  await assert.rejects(
    withTransaction(pool, async (tx) => {
      await tx.query("INSERT INTO entries VALUES (5)");
      throw new Error("refused");
    }),
    /refused/,
  );
  // The session held a transaction that never ended; closing it rolled that back on the server.
  const next = (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  assert.notEqual(next, pid);
  assert.deepEqual(await entries(), [1, 4]);
});
