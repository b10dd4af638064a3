// "No data changed by a refused request": a hash of every row of every table of the service's schema,
// taken before and after a batch of requests that were all refused, compared row by row.
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";

/** Tables left out, and why: each changes, by design, on requests that are refused. */
export const EXCLUDED_TABLES: Record<string, string> = {
  rate_limit_windows: "per-minute request counters: every request is counted, refused ones included (decisions 3), and a job prunes old windows",
  idempotency_keys: "the first answer to each Idempotency-Key is kept, refusals included, so a repeat replays it (decisions 11)",
  dashboard_auth_failures: "failed dashboard sign-ins counted per email and per address: the throttle must count the refusals themselves (decisions 18)",
  exchange_rates: "a cache of the outside rate, appended whenever a request needs a rate older than validFor (300 s)",
  chain_reconciliation: "where the periodic check of the chain against the indexer has reached: it moves by itself every interval, like the indexer's schema it reads",
};

/**
 * Tables read as what they mean rather than row by row: the orders' counters are a ledger whose rows a
 * worker folds into their sums every few seconds (migration order-counts-ledger), so a fold between two
 * snapshots changes rows and no total; the totals are what a refused request must not change.
 */
export const TABLES_READ_AS: Record<string, { why: string; rows: (table: string) => string }> = {
  order_counts: {
    why: "read as each partner's and status's total: a worker folds the ledger's rows into their sums every 5 s, which changes rows and no total",
    rows: (table) => `SELECT partner_id, status, sum(count) AS count FROM ${table} GROUP BY partner_id, status HAVING sum(count) <> 0`,
  },
};

/** Schemas not read at all: the job queue (cron and maintenance rows change every minute) and Ponder's chain mirror. */
export const EXCLUDED_SCHEMAS = "pg-boss's schema (job queue: its cron and maintenance rows change by themselves) and the indexer's schema (a mirror of the chain)";

export interface Snapshot {
  /** table -> row hash -> count */
  tables: Map<string, Map<string, number>>;
}

export interface TableChange {
  table: string;
  added: number;
  removed: number;
  /** Some rows as they are now (added or changed), for the report. */
  examples: string[];
}

export async function createSnapshotter(databaseUrl: string, schema = "public") {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name",
    [schema],
  );
  const tables = rows.map((row) => row.table_name).filter((name) => !(name in EXCLUDED_TABLES));
  const quote = (name: string) => `"${schema.replaceAll('"', '""')}"."${name.replaceAll('"', '""')}"`;
  const rowsOf = (table: string) => (TABLES_READ_AS[table] ? `(${TABLES_READ_AS[table].rows(quote(table))})` : quote(table));
  const union = tables.map((table, i) => `SELECT ${i} AS t, md5(x::text) AS h FROM ${rowsOf(table)} x`).join(" UNION ALL ");

  async function take(): Promise<Snapshot> {
    const result = await client.query<{ t: number; h: string }>(union);
    const snapshot: Snapshot = { tables: new Map(tables.map((table) => [table, new Map<string, number>()])) };
    for (const row of result.rows) {
      const hashes = snapshot.tables.get(tables[row.t]!)!;
      hashes.set(row.h, (hashes.get(row.h) ?? 0) + 1);
    }
    return snapshot;
  }

  async function diff(before: Snapshot, after: Snapshot): Promise<TableChange[]> {
    const changes: TableChange[] = [];
    for (const table of tables) {
      const a = before.tables.get(table)!;
      const b = after.tables.get(table)!;
      const added: string[] = [];
      let removed = 0;
      for (const [hash, count] of b) if ((a.get(hash) ?? 0) < count) added.push(hash);
      for (const [hash, count] of a) if ((b.get(hash) ?? 0) < count) removed += 1;
      if (added.length === 0 && removed === 0) continue;
      const examples = added.length
        ? (await client.query<{ row: string }>(`SELECT x::text AS row FROM ${rowsOf(table)} x WHERE md5(x::text) = ANY($1) LIMIT 3`, [added.slice(0, 3)])).rows.map((r) => r.row.slice(0, 400))
        : [];
      changes.push({ table, added: added.length, removed, examples });
    }
    return changes;
  }

  function equal(a: Snapshot, b: Snapshot): boolean {
    for (const table of tables) {
      const x = a.tables.get(table)!;
      const y = b.tables.get(table)!;
      if (x.size !== y.size) return false;
      for (const [hash, count] of x) if (y.get(hash) !== count) return false;
    }
    return true;
  }

  /**
   * Whether a webhook delivery will change by itself within `horizonMs`: its next attempt (a retry on
   * the schedule, or an operator's redelivery) falls due by then, or a worker holds it now (an attempt in
   * flight, its claim renewed every few seconds). Quiet for a second is not quiet enough when a retry
   * falls due 30 s after an attempt: it changed its row in the middle of a later batch of refusals.
   */
  async function deliveryDueWithin(horizonMs: number): Promise<boolean> {
    const { rows } = await client.query<{ due: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${quote("webhook_deliveries")} WHERE status = 'PENDING'
                        AND (next_attempt_at < now() + make_interval(secs => $1) OR claimed_by IS NOT NULL)) AS due`,
      [horizonMs / 1000],
    );
    return rows[0]!.due;
  }

  /**
   * Waits until nothing changes for `stableMs` (webhook deliveries, chain events and timers that valid
   * requests set off) and no webhook delivery falls due within `horizonMs`, at most `timeoutMs`; returns
   * the last snapshot and whether it settled.
   */
  async function settle(stableMs = 1_000, timeoutMs = 20_000, horizonMs = 5_000): Promise<{ snapshot: Snapshot; settled: boolean }> {
    const deadline = Date.now() + timeoutMs;
    let last = await take();
    let since = Date.now();
    for (;;) {
      await sleep(200);
      const current = await take();
      if (!equal(last, current)) {
        last = current;
        since = Date.now();
      } else if (Date.now() - since >= stableMs && !(await deliveryDueWithin(horizonMs))) {
        return { snapshot: current, settled: true };
      }
      if (Date.now() > deadline) return { snapshot: current, settled: false };
    }
  }

  /** Runs one query on the service's database (the concurrency checks count rows). */
  async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
    return (await client.query<T>(text, values)).rows;
  }

  return { tables, take, diff, equal, settle, query, close: () => client.end() };
}

export type Snapshotter = Awaited<ReturnType<typeof createSnapshotter>>;
