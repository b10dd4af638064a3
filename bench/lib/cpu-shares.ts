// Where a saturated machine's cores go over a stretch of a figure, by process, from /proc: the service
// instances, PostgreSQL's sessions by who opened them (pg_stat_activity's application_name), Ponder, the
// Hardhat node, the bench itself, and the rest of the machine. Figures 5 and 9 are bound by the 2 cores
// all of these share, so what each takes a trade is what a change has to move (docs/benchmarks.md).
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import type pg from "pg";
import { cpuSecondsOf } from "./child.ts";
import { round } from "./stats.ts";

/** A process's group in the breakdown; a PostgreSQL session's by the application that opened it. */
function groupOf(stat: string, cmdline: string, session: string | undefined): string | undefined {
  if (stat.includes(" (postgres) ")) {
    if (session === undefined || session === "") return "PostgreSQL, server processes and unnamed sessions";
    if (session === "offramp-jobs") return "PostgreSQL, pg-boss's sessions";
    if (session.startsWith("offramp")) return "PostgreSQL, the service's sessions";
    if (session.startsWith("ponder")) return "PostgreSQL, Ponder's sessions";
    return `PostgreSQL, ${session}`;
  }
  if (/hardhat\/.*cli\.js\0node\0/.test(cmdline)) return "Hardhat node";
  // Ponder and the esbuild service it starts to load its configuration.
  if (/\/ponder\0start\0|esbuild\0--service/.test(cmdline)) return "Ponder";
  return undefined;
}

interface Sample {
  at: number;
  /** CPU seconds so far of each process in a group, by pid. */
  processes: Map<number, { group: string; seconds: number }>;
  /** Busy CPU seconds of the whole machine so far (every core; /proc/stat, idle and iowait left out). */
  machineBusy: number;
}

function machineBusySeconds(): number {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
}

async function sample(pool: pg.Pool, services: number[]): Promise<Sample> {
  const { rows } = await pool.query<{ pid: number; application_name: string }>("SELECT pid, application_name FROM pg_stat_activity");
  const sessions = new Map(rows.map((row) => [row.pid, row.application_name]));
  const processes = new Map<number, { group: string; seconds: number }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      // The stat line read once: its command name sorts the process, its times are what it used.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const group = services.includes(pid)
        ? "service"
        : pid === process.pid
          ? "bench (load and webhook receiver)"
          : groupOf(stat, readFileSync(`/proc/${pid}/cmdline`, "utf8"), sessions.get(pid));
      if (group) processes.set(pid, { group, seconds: cpuSecondsOf(stat) });
    } catch {
      // exited between the listing and the read
    }
  }
  return { at: performance.now(), processes, machineBusy: machineBusySeconds() };
}

export interface CpuShares {
  seconds: number;
  /** CPU seconds by group over the stretch, the rest of the machine's busy time as "other". */
  groups: Record<string, number>;
  /** The machine's busy time over the stretch against all its cores' time (1 = every core busy throughout). */
  machineBusyFraction: number;
}

/** How often the processes are read: a process that exits (a pooled session closed when idle) loses at most this much of its time. */
const SAMPLE_MS = 1000;

/**
 * Starts measuring; the returned function ends the stretch. Each process's time is added up between
 * reads a second apart: one that started in between counts from zero (a PostgreSQL session opened under
 * load), one that exited loses only what it used since the last read.
 */
export async function measureCpuShares(pool: pg.Pool, services: number[]): Promise<() => Promise<CpuShares>> {
  const first = await sample(pool, services);
  let last = first;
  const groups: Record<string, number> = {};
  const add = (next: Sample) => {
    for (const [pid, { group, seconds }] of next.processes) {
      groups[group] = (groups[group] ?? 0) + seconds - (last.processes.get(pid)?.seconds ?? 0);
    }
    last = next;
  };
  let reading: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    reading = reading.then(async () => add(await sample(pool, services))).catch(() => undefined);
  }, SAMPLE_MS);
  return async () => {
    clearInterval(timer);
    await reading;
    add(await sample(pool, services));
    const seconds = (last.at - first.at) / 1000;
    const busy = last.machineBusy - first.machineBusy;
    const counted = Object.values(groups).reduce((sum, value) => sum + value, 0);
    return { seconds, groups: { ...groups, other: Math.max(0, busy - counted) }, machineBusyFraction: round(busy / (seconds * availableParallelism()), 2)! };
  };
}

/** Stretches measured apart (figure 9's slices of one configuration) as one: their seconds and CPU added up. */
export function addCpuShares(stretches: CpuShares[]): CpuShares {
  const groups: Record<string, number> = {};
  for (const stretch of stretches) for (const [group, seconds] of Object.entries(stretch.groups)) groups[group] = (groups[group] ?? 0) + seconds;
  const seconds = stretches.reduce((sum, stretch) => sum + stretch.seconds, 0);
  const busy = stretches.reduce((sum, stretch) => sum + stretch.machineBusyFraction * stretch.seconds, 0);
  return { seconds, groups, machineBusyFraction: round(seconds > 0 ? busy / seconds : 0, 2)! };
}

/** CPU seconds of every group counted over the stretch (the rest of the machine's busy time included). */
export function cpuSharesTotal(shares: CpuShares): number {
  return Object.values(shares.groups).reduce((sum, value) => sum + value, 0);
}

/** The breakdown as a figure's extra row: CPU milliseconds a unit (a trade, a pair) by group, each with its share. */
export function cpuSharesMeasure(label: string, shares: CpuShares, units: number, unit = "trade") {
  const total = cpuSharesTotal(shares);
  const detail: Record<string, string | number> = { machineBusy: shares.machineBusyFraction };
  for (const [group, seconds] of Object.entries(shares.groups).sort((a, b) => b[1] - a[1])) {
    detail[group] = `${round((seconds * 1000) / units, 1)} ms (${round((100 * seconds) / total, 0)}%)`;
  }
  return { label, value: round((total * 1000) / units, 1), unit: `ms CPU a ${unit}`, detail };
}
