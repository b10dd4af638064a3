import { PgBoss } from "pg-boss";
import { POOL_WAIT_MS, prepared, type Queryable } from "../db/pool.ts";
import type { Logger } from "../logger.ts";

export type { PgBoss };

/** How often pg-boss's supervisor gives back the jobs of dead or hung workers (expiry, missed heartbeat). */
export const SUPERVISE_INTERVAL_SECONDS = 10;

/** pg-boss in its own schema of the service's database: timers, retries and periodic work survive restarts. */
export async function startJobs(databaseUrl: string, logger: Logger): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    schema: "pgboss",
    application_name: "offramp-jobs",
    connectionTimeoutMillis: POOL_WAIT_MS,
    // A job whose worker died (SIGKILL) is retried once its expiry passes and the supervisor notices:
    // supervising every 10 s instead of 60 s bounds that recovery to the job's expiry plus ~10 s.
    superviseIntervalSeconds: SUPERVISE_INTERVAL_SECONDS,
    monitorIntervalSeconds: 10,
    // Workers are woken by a NOTIFY sent with each job (delivered when the sending transaction
    // commits): at once in the instance that sent it, and in another only if that one has not fetched
    // the queue within its polling interval (else at the interval's end), so two instances do not both
    // fetch for every job; polling stays as the floor for delayed jobs (timers, retries) and for a
    // listener that is down, one idle poll a queue and interval whatever its worker count
    // (patches/pg-boss+12.38.0.patch).
    useListenNotify: true,
  });
  boss.on("error", (error) => logger.error({ err: error }, "job queue error"));
  await boss.start();
  await ensureJobDueIndex(boss);
  return boss;
}

/**
 * Each queue's jobs not yet active by due time, then creation: what a worker with `orderByStartAfter`
 * (DUE_FIRST, src/jobs/queues.ts) reads, so its fetch stops at the first job not yet due. pg-boss's own
 * indexes order them by priority and creation, and a fetch then read every open order's timer at each
 * poll (docs/benchmarks.md, stop 58). On pg-boss's parent table, so each queue's partition has it.
 */
export const JOB_DUE_INDEX = "job_due";

async function ensureJobDueIndex(boss: PgBoss): Promise<void> {
  // One statement, one transaction: the advisory lock keeps instances starting together from creating it twice.
  await boss.getDb().executeSql(
    `DO $$ BEGIN
       PERFORM pg_advisory_xact_lock(hashtext('offramp:pgboss.${JOB_DUE_INDEX}'));
       CREATE INDEX IF NOT EXISTS ${JOB_DUE_INDEX} ON pgboss.job (name, start_after, created_on) WHERE state < 'active' AND NOT blocked;
     END $$`,
  );
}

/**
 * pg-boss's `db` option bound to a caller's transaction: the job exists if and only if it commits (or to
 * the service's pool, for a job written on its own that should be planned once a session too). Its
 * parameterized statements (a job's insert, a completion) run as named prepared statements: their texts
 * depend only on the queue and the call's kind, and PostgreSQL spent more time planning them than running
 * them (figure 5: 0.45 ms planning against 0.29 ms running a job insert, 10 inserts a trade).
 * `planEachCall` plans the statement for its values instead (see jobWritesAtOnce's delete).
 */
export function inTransaction(tx: Queryable, options: { planEachCall?: boolean } = {}): { db: { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: unknown[] }> } } {
  const withValues = options.planEachCall ? (text: string, values: unknown[]) => tx.query(text, values) : (text: string, values: unknown[]) => tx.query(prepared(text, values));
  return { db: { executeSql: (text, values) => (values && values.length > 0 ? withValues(text, values) : tx.query(text)) } };
}
