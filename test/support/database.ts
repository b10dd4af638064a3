import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import type net from "node:net";
import path from "node:path";
import pg from "pg";
import { connectable } from "../../src/stack/embedded-postgres.ts";

/** The PostgreSQL server tests run against (CI and dev machines run one at 127.0.0.1:5432). */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/**
 * Where a raw connection to the server of `databaseUrl` goes (the tests' fault-injecting fronts): its
 * Unix-domain socket when the URL's host is a directory (the embedded server's URL), else host and port.
 */
export function serverAddress(databaseUrl: string): net.NetConnectOpts {
  const url = new URL(databaseUrl);
  const host = decodeURIComponent(url.hostname);
  const port = Number(url.port || 5432);
  return host.startsWith("/") ? { path: path.join(host, `.s.PGSQL.${port}`) } : { host, port };
}

/**
 * `serverUrl` through the server's Unix-domain socket when the server runs on this machine and lets this
 * user in that way (its socket is in the first of its `unix_socket_directories`), else `serverUrl` as it
 * is. The bench's stack reaches its local server so, as a deployment on one machine would (stop 65).
 */
export async function throughLocalSocket(serverUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  let setting: { dir: string; port: string };
  try {
    const { rows } = await client.query<{ dir: string; port: string }>(
      "SELECT trim(split_part(current_setting('unix_socket_directories'), ',', 1)) AS dir, current_setting('port') AS port",
    );
    setting = rows[0]!;
  } finally {
    await client.end();
  }
  if (!setting.dir.startsWith("/") || !existsSync(path.join(setting.dir, `.s.PGSQL.${setting.port}`))) return serverUrl;
  const url = new URL(serverUrl);
  url.hostname = encodeURIComponent(setting.dir);
  url.port = setting.port;
  // Not when its pg_hba.conf lets this user in over TCP only.
  return (await connectable(url.toString())) ? url.toString() : serverUrl;
}

/** A fresh database per test file, so files run in parallel without seeing each other's rows. */
export async function createTestDatabase(serverUrl = TEST_SERVER_URL): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `offramp_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
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
