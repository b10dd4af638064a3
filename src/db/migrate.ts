import { fileURLToPath } from "node:url";
import { runner } from "node-pg-migrate";
import type { Logger } from "../logger.ts";

const migrationsDir = fileURLToPath(new URL("./migrations", import.meta.url));

/** Applies pending migrations in order under node-pg-migrate's advisory lock, so concurrent starts are safe. */
export async function migrate(databaseUrl: string, logger?: Logger): Promise<void> {
  await runner({
    databaseUrl,
    dir: migrationsDir,
    migrationsTable: "pgmigrations",
    direction: "up",
    checkOrder: true,
    log: (message) => logger?.debug({ migration: message }, "migration"),
  });
}
