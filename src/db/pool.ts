import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

// NUMERIC and BIGINT come back as strings so money and token amounts are never rounded by a float.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => value);
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

/**
 * A pool whose idle sessions may be cut (database restart, failover, an operator's pg_terminate_backend)
 * without taking the process down: pg emits such errors on the pool, and an unheard 'error' event would
 * be thrown. The broken session is already discarded and the next query opens a new one.
 */
export function createPool(connectionString: string, max = 10, logger?: { warn(details: object, message: string): void }): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: "offramp" });
  pool.on("error", (error) => logger?.warn({ err: error }, "idle database session lost"));
  return pool;
}

/** Runs `work` in one transaction: every state change and the events it causes commit together or not at all. */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
