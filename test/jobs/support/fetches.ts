import type { PgBoss } from "../../../src/jobs/boss.ts";

/** Whether `check` holds within `withinMs`. */
export async function within(withinMs: number, check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/**
 * Calls `listener` with each fetch of the queue `name` (its SQL and parameters) that `boss` sends to the
 * database from now on, until the returned function is called.
 */
export function onFetches(boss: PgBoss, name: string, listener: (text: string, values: unknown[]) => void): () => void {
  const db = boss.getDb() as { executeSql: (text: string, values?: unknown[], ...options: unknown[]) => Promise<unknown> };
  const original = db.executeSql;
  // Every statement passes through with all it was given (pg-boss hands some an abort signal).
  db.executeSql = function (this: unknown, text: string, values?: unknown[], ...options: unknown[]) {
    if (text.includes("SKIP LOCKED") && text.includes(`'${name}'`)) listener(text, values ?? []);
    return original.call(this, text, values, ...options);
  };
  return () => {
    db.executeSql = original;
  };
}
