// What the run was measured on: cores, memory, Node.js, load average, PostgreSQL.
import { execFileSync } from "node:child_process";
import os from "node:os";

export interface MachineInfo {
  nproc: string;
  cpuModel: string;
  freeH: string;
  totalMemoryGiB: number;
  node: string;
  platform: string;
  kernel: string;
  postgres: string | null;
}

function run(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", timeout: 5_000 }).trimEnd();
  } catch (error) {
    return `unavailable (${(error as Error).message.split("\n")[0]})`;
  }
}

export function machineInfo(postgresVersion: string | null): MachineInfo {
  return {
    nproc: run("nproc", []),
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    freeH: run("free", ["-h"]),
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    postgres: postgresVersion,
  };
}

/** 1, 5 and 15 minute load averages, as `uptime` shows them. */
export function loadAverage(): [number, number, number] {
  const [one, five, fifteen] = os.loadavg();
  const r = (value: number | undefined) => Math.round((value ?? 0) * 100) / 100;
  return [r(one), r(five), r(fifteen)];
}

/** The commit measured, and how many tracked files differed from it when the run started. */
export function codeVersion(cwd: string): { commit: string; modifiedTrackedFiles: number } {
  const commit = run("git", ["-C", cwd, "log", "-1", "--format=%h %s"]);
  const status = run("git", ["-C", cwd, "status", "--porcelain", "--untracked-files=no"]);
  return { commit, modifiedTrackedFiles: status.startsWith("unavailable") ? -1 : status.split("\n").filter(Boolean).length };
}
