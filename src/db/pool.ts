import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import type net from "node:net";
import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

/**
 * A statement each session parses and plans once, then runs again by name (node-pg's named prepared
 * statements), for the reads a busy API repeats with other values: the order book's page planned in 2-6 ms
 * and ran in 0.6 ms (EXPLAIN ANALYZE under figure 3's load), the planning repeated for every request; the
 * statements of a trade's transitions, events and job inserts likewise (figure 5). The name is the text's
 * hash, so one text is one statement however it was built. Only for texts that carry no values, or a
 * bounded few (GET /orders' first-page limit, 1 to 100), since each session keeps every statement it
 * prepared; and whose result names its columns: a table's `*` in a prepared statement fails ("cached plan
 * must not change result type") once a migration adds a column.
 * Nor for a statement joining an array of keys to a table that starts empty: the session keeps the
 * generic plan made while the table was small (sequential scans) until the table is next analyzed. The
 * delivery worker's check of an order's earlier events and its outcome's update scanned all 7,000
 * deliveries at each call that way in a figure 5 run begun on an empty database (auto_explain); unnamed,
 * each call is planned for the table as it is. Naming a statement does not by itself stop its planning:
 * after five calls PostgreSQL keeps a generic plan only if it is priced no higher than the custom ones, and
 * a parameter whose value decides the estimate (a time compared with a column, a LIMIT) can keep every call
 * custom-planned; `pg_prepared_statements` shows which (the order book's total, docs/benchmarks.md stop 34).
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `p_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}
// Bounded by the code's statement texts: no value enters a text but a first page's limit (1 to 100).
const statementNames = new Map<string, string>();

// NUMERIC and BIGINT come back as strings so money and token amounts are never rounded by a float.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => value);
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

/**
 * How long a query waits for a session (a free one of the pool, or a new connection) before it fails:
 * past it the request answers 503 (databaseUnavailable) instead of waiting without end on a pool held
 * by others or a database that is down. Every pool of the service uses it, pg-boss's included.
 */
export const POOL_WAIT_MS = 5_000;

// SQLSTATE classes and codes that mean the database cannot serve now, whatever the query: connection
// exceptions (08), shutting down or starting up (57P01-57P03), too many connections (53300).
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300)$/;
const UNAVAILABLE_SYSTEM_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * Whether `error` says the database could not be reached or gave no session in time (as opposed to a
 * query that failed): the pool's wait ran out, the connection was refused or cut, the server is
 * restarting. Such a request is answered 503 with Retry-After (http/errors.ts).
 */
export function databaseUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_SYSTEM_CODES.has(code))) return true;
  // pg-pool's and pg's own errors carry no code, only these messages. The last: a session whose connection
  // was cut between two statements of a transaction (the database killed) refuses the next one.
  return (
    typeof message === "string" &&
    /^(timeout exceeded when trying to connect|Connection terminated (unexpectedly|due to connection timeout)|Client has encountered a connection error and is not queryable)/.test(message)
  );
}

/**
 * A pool whose idle sessions may be cut (database restart, failover, an operator's pg_terminate_backend)
 * without taking the process down: pg emits such errors on the pool, and an unheard 'error' event would
 * be thrown. The broken session is already discarded and the next query opens a new one.
 */
export function createPool(connectionString: string, max = 10, logger?: { warn(details: object, message: string): void }): pg.Pool {
  // Pipelined sessions: a statement is sent as soon as it is asked for, not once the one before it is
  // answered. Code that awaits each statement sends them one at a time as before; a transaction's BEGIN
  // is sent ahead of its first statement (withTransaction), one round trip fewer a transaction.
  const pool = new pg.Pool({ connectionString, max, application_name: "offramp", connectionTimeoutMillis: POOL_WAIT_MS, pipeline: true });
  pool.on("error", (error) => logger?.warn({ err: error }, "idle database session lost"));
  // A session in use (a transaction, a claim, a LISTEN) whose connection is cut (the database killed or
  // restarted) also emits 'error'; the pool listens only while it is idle, and an unheard 'error' would
  // take the process down. Its queries fail on their own, and a broken session is dropped at release.
  pool.on("connect", (client) => {
    client.on("error", (error) => logger?.warn({ err: error }, "database session lost while in use"));
    writeOncePerTurn(client);
  });
  // Inside a unit of work on this pool, its queries run in the unit's transaction (see inUnitOfWork).
  const direct = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const unit = unitOf(pool);
    return unit ? (unit.session.query as (...args: unknown[]) => unknown).apply(unit.session, args) : direct(...args);
  }) as typeof pool.query;
  unitAware.add(pool);
  return pool;
}

/** The socket a session writes its statements to (node-postgres keeps it on the client's connection). */
export function sessionSocket(client: pg.PoolClient): net.Socket {
  return (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
}

/**
 * What a session is asked to send in one turn of the event loop goes out in one write. node-postgres
 * writes each statement as it is asked for, so a transaction's BEGIN and its first statement, or the
 * statements sent together for allAnswered, were a system call each for the service and as many reads
 * for PostgreSQL's backend. The socket is corked at the turn's first write and uncorked once the turn's
 * code (its promise callbacks included) has run.
 */
function writeOncePerTurn(client: pg.PoolClient): void {
  const stream = sessionSocket(client);
  const write = stream.write;
  let corked = false;
  const flush = () => {
    corked = false;
    stream.uncork();
  };
  stream.write = function (this: typeof stream, ...args: Parameters<typeof write>) {
    if (!corked) {
      corked = true;
      stream.cork();
      process.nextTick(flush);
    }
    return write.apply(this, args);
  } as typeof write;
}

/** One request's transaction on a session it holds, standing in for `pool` while `work` runs. */
interface UnitOfWork {
  pool: pg.Pool;
  session: pg.PoolClient;
  open: boolean;
  savepoints: number;
}

const units = new AsyncLocalStorage<UnitOfWork>();
const unitAware = new WeakSet<pg.Pool>();

function unitOf(pool: pg.Pool): UnitOfWork | undefined {
  const unit = units.getStore();
  return unit?.open && unit.pool === pool ? unit : undefined;
}

/**
 * Runs `work` with `session`'s open transaction standing in for `pool` (a pool made by createPool): its
 * queries run in that transaction and each withTransaction() on it becomes a savepoint, so nothing
 * `work` changes commits before the caller commits the session. The Idempotency-Key middleware commits
 * a request's answer this way, in the same transaction as the change it answers for. Only what runs
 * inside `work` (its awaited calls) takes part; `pool.connect()` still hands out a session of its own.
 */
export async function inUnitOfWork<T>(pool: pg.Pool, session: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  if (!unitAware.has(pool)) throw new Error("a unit of work needs a pool made by createPool");
  const unit: UnitOfWork = { pool, session, open: true, savepoints: 0 };
  try {
    return await units.run(unit, work);
  } finally {
    // Anything `work` left running falls back to the pool once the unit is over.
    unit.open = false;
  }
}

async function inSavepoint<T>(unit: UnitOfWork, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  unit.savepoints += 1;
  const name = `unit_${unit.savepoints}`;
  // A failed ROLLBACK TO leaves the unit's transaction aborted: its own commit then fails.
  return enclosed(unit.session, { open: `SAVEPOINT ${name}`, close: `RELEASE SAVEPOINT ${name}`, undo: `ROLLBACK TO SAVEPOINT ${name}` }, work, () => undefined);
}

/**
 * `work` between the `open` and `close` statements on `session`, or `undo` when it fails (`undoFailed`
 * told when that fails too). `open` is sent without waiting for its answer, on the wire just ahead of
 * `work`'s first statement (the pool's sessions pipeline). An `open` that fails leaves that statement
 * outside the transaction only in theory: BEGIN and SAVEPOINT fail only on a session that cannot run the
 * statement behind them either (its connection cut, its transaction aborted); and their failure is the one
 * reported, over whatever `work` did.
 */
async function enclosed<T>(
  session: pg.PoolClient,
  statements: { open: string; close: string; undo: string },
  work: (client: pg.PoolClient) => Promise<T>,
  undoFailed: () => void,
): Promise<T> {
  const opened = session.query(statements.open).then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  try {
    const result = await work(session);
    const failed = await opened;
    if (failed) throw failed.error;
    await session.query(statements.close);
    return result;
  } catch (error) {
    const failed = await opened;
    await session.query(statements.undo).catch(undoFailed);
    throw failed?.error ?? error;
  }
}

/**
 * Waits for statements a caller sent on one session without waiting for each other's answers (its sessions
 * pipeline, so each goes on the wire as it is asked for and PostgreSQL runs them in that order): one
 * round trip for all. Settles only once every one is answered, so none is still to run when the caller
 * moves on (commits, rolls back, hands the session back); then throws the first failure, in their order.
 */
export async function allAnswered<T extends readonly unknown[]>(sent: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(sent);
  for (const outcome of settled) if (outcome.status === "rejected") throw outcome.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/**
 * Runs `work` in one transaction: every state change and the events it causes commit together or not at
 * all. Inside a unit of work on `pool` it is a savepoint of the unit's transaction instead.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const unit = unitOf(pool);
  if (unit) return inSavepoint(unit, work);
  const client = await pool.connect();
  // A session whose rollback failed may still hold the transaction: it is closed, not reused.
  let broken = false;
  try {
    return await enclosed(client, { open: "BEGIN", close: "COMMIT", undo: "ROLLBACK" }, work, () => (broken = true));
  } finally {
    client.release(broken);
  }
}
