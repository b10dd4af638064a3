import { randomBytes } from "node:crypto";
import pg from "pg";

/** The PostgreSQL server tests run against (CI and dev machines run one at 127.0.0.1:5432). */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A fresh database per test file, so files run in parallel without seeing each other's rows. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `offramp_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(TEST_SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: TEST_SERVER_URL });
      await client.connect();
      try {
        // A pool's end() resolves before its sockets are closed: wait for the sessions to go, so FORCE
        // (kept for leftovers) does not kill a client still closing, which would throw in the test process.
        for (let attempt = 0; attempt < 50; attempt += 1) {
          const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1", [name]);
          if (Number(rows[0]!.n) === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Holds the registration of `partnerUserRef` with the same user inserted in a transaction left open, so
 * that a `POST /users` of that ref stops inside its handler (its insert waits on the open row's key), past
 * authentication and the Idempotency-Key claim, until `release` rolls the open row back.
 */
export async function holdUserCreation(pool: pg.Pool, partnerId: string, partnerUserRef: string): Promise<{ inHandler: () => Promise<void>; release: () => Promise<void> }> {
  const blocker = await pool.connect();
  await blocker.query("BEGIN");
  await blocker.query("INSERT INTO users (id, partner_id, partner_user_ref, kyc_status, kyc_tier) VALUES ($1, $2, $3, 'NOT_REQUIRED', 'NONE')", [
    `usr_held_${Date.now().toString(16)}`,
    partnerId,
    partnerUserRef,
  ]);
  return {
    /** Resolves once a request waits on the open row. */
    async inHandler() {
      for (let tries = 0; tries < 400; tries += 1) {
        const { rows } = await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO users%' AND pid <> pg_backend_pid()");
        if (rows.length) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error("no request reached its handler");
    },
    async release() {
      await blocker.query("ROLLBACK");
      blocker.release();
    },
  };
}
