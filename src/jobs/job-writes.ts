import type { JobInsert } from "pg-boss";
import { allAnswered, type Queryable } from "../db/pool.ts";
import { inTransaction, type PgBoss } from "./boss.ts";

/** Job writes inside the caller's transaction: each job exists if and only if that transaction commits. */
export interface JobWrites {
  /** Jobs into `queue` (pg-boss `insert`: a job whose id is taken is skipped). */
  insert(queue: string, jobs: JobInsert[]): Promise<void>;
  /** Jobs of `queue` deleted by id. */
  delete(queue: string, ids: string[]): Promise<void>;
}

/** Each write as it is asked for: one statement each. */
export function jobWritesAtOnce(boss: PgBoss, tx: Queryable): JobWrites {
  return {
    async insert(queue, jobs) {
      if (jobs.length > 0) await boss.insert(queue, jobs, inTransaction(tx));
    },
    async delete(queue, ids) {
      // Planned for its ids: a prepared delete's generic plan, which cannot know how many ids it gets,
      // priced one index descent an id above reading the queue's every job by (name, created_on), and each
      // cancelled timer read every open order's timer (figure 5, docs/benchmarks.md stop 70).
      if (ids.length > 0) await boss.deleteJob(queue, ids, inTransaction(tx, { planEachCall: true }));
    },
  };
}

type Write = { kind: "insert"; queue: string; jobs: JobInsert[] } | { kind: "delete"; queue: string; ids: string[] };

/**
 * Writes held back until `flush`, which the caller awaits before its transaction commits: many
 * transitions applied in one transaction (a block's escrow events) then write their timers and deliveries
 * in one statement a queue, not one a job. Writes to distinct job ids commute (a job without an id is new),
 * so they are gathered by queue, inserts before deletes, and sent together, each without waiting for the
 * one before (one round trip on a pipelining session); when one id is both inserted and deleted, the
 * writes keep their order (runs of one kind and queue still go together) and each waits for the one before.
 */
export function gatheredJobWrites(boss: PgBoss, tx: Queryable): JobWrites & { flush(): Promise<void> } {
  let pending: Write[] = [];
  return {
    async insert(queue, jobs) {
      if (jobs.length > 0) pending.push({ kind: "insert", queue, jobs });
    },
    async delete(queue, ids) {
      if (ids.length > 0) pending.push({ kind: "delete", queue, ids });
    },
    async flush() {
      const writes = pending;
      pending = [];
      const now = jobWritesAtOnce(boss, tx);
      const send = (write: Write) => (write.kind === "insert" ? now.insert(write.queue, write.jobs) : now.delete(write.queue, write.ids));
      const { runs, commute } = gathered(writes);
      if (commute) await allAnswered(runs.map(send));
      else for (const run of runs) await send(run);
    },
  };
}

function gathered(writes: Write[]): { runs: Write[]; commute: boolean } {
  const key = (queue: string, id: string) => `${queue}\u0000${id}`;
  const inserted = new Set(writes.flatMap((write) => (write.kind === "insert" ? write.jobs.flatMap((job) => (job.id ? [key(write.queue, job.id)] : [])) : [])));
  const commute = !writes.some((write) => write.kind === "delete" && write.ids.some((id) => inserted.has(key(write.queue, id))));
  const ordered = commute ? [...writes].sort((a, b) => Number(a.kind === "delete") - Number(b.kind === "delete") || a.queue.localeCompare(b.queue)) : writes;
  const runs: Write[] = [];
  for (const write of ordered) {
    const last = runs.at(-1);
    if (last?.kind === "insert" && write.kind === "insert" && last.queue === write.queue) last.jobs.push(...write.jobs);
    else if (last?.kind === "delete" && write.kind === "delete" && last.queue === write.queue) last.ids.push(...write.ids);
    else runs.push(write.kind === "insert" ? { ...write, jobs: [...write.jobs] } : { ...write, ids: [...write.ids] });
  }
  return { runs: runs.map((run) => (run.kind === "insert" ? { ...run, jobs: withoutRepeatedIds(run.jobs) } : { ...run, ids: [...new Set(run.ids)] })), commute };
}

/** pg-boss refuses an insert naming one id twice; the first wins, as a second insert of it would be skipped. */
function withoutRepeatedIds(jobs: JobInsert[]): JobInsert[] {
  const seen = new Set<string>();
  return jobs.filter((job) => {
    if (!job.id) return true;
    if (seen.has(job.id)) return false;
    seen.add(job.id);
    return true;
  });
}
