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

/**
 * The migrated database a run's test databases on TEST_SERVER_URL are copied from, named by
 * scripts/test-service.ts (createTemplateDatabase). A file run alone, without it, builds its schema itself.
 */
const TEMPLATE = process.env.TEST_DATABASE_TEMPLATE;

/** A fresh database per test file, so files run in parallel without seeing each other's rows. */
export async function createTestDatabase(serverUrl = TEST_SERVER_URL): Promise<{ url: string; drop(): Promise<void> }> {
  return createDatabase(serverUrl, "offramp_test", TEMPLATE !== undefined && serverUrl === TEST_SERVER_URL ? TEMPLATE : undefined);
}

/**
 * A database with the service's migrations and pg-boss's schema applied, to copy test databases from:
 * a copy costs PostgreSQL about 0.25 s of CPU less than building the schema in each (docs/benchmarks.md,
 * stop 73). The service still runs its migrations at every start; they find nothing to do.
 */
export async function createTemplateDatabase(serverUrl = TEST_SERVER_URL): Promise<{ name: string; drop(): Promise<void> }> {
  // Imported here: the test files' processes never make one.
  const [{ migrate }, { startJobs }, { createLogger }] = await Promise.all([
    import("../../src/db/migrate.ts"),
    import("../../src/jobs/boss.ts"),
    import("../../src/logger.ts"),
  ]);
  const database = await createDatabase(serverUrl, "offramp_template", undefined);
  try {
    await migrate(database.url);
    const jobs = await startJobs(database.url, createLogger("warn"));
    await jobs.stop({ graceful: false });
    // A database being copied must have no sessions: wait for the ones just closed to go.
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await waitForNoSessions(admin, database.name);
    } finally {
      await admin.end();
    }
  } catch (error) {
    await database.drop();
    throw error;
  }
  return database;
}

async function createDatabase(serverUrl: string, prefix: string, template: string | undefined): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}${template === undefined ? "" : ` TEMPLATE ${template}`}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      // A pool's end() resolves before its sockets are closed: wait for the sessions to go, so FORCE
      // (kept for leftovers) does not kill a client still closing, which would throw in the test process.
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await waitForNoSessions(client, name);
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Waits up to 5 s for the sessions on database `name` to end, asking through `admin`, a session on another database. */
async function waitForNoSessions(admin: pg.Client, name: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1", [name]);
    if (Number(rows[0]!.n) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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
