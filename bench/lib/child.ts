// Child processes of the bench: the service (test/support/service-process.ts, as production runs it:
// its own process, its own event loop, so the load generator in this process does not share its CPU
// time slices) and the bare Koa reference. Both print "READY <url>" once they listen.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";

import { repoRoot } from "../../src/paths.ts";
import { serviceNodeFlags, withCompileCache } from "../../src/stack/node-runtime.ts";
import type { ServiceProcessSpec } from "../../test/support/service-process.ts";
import { orphanWatchdogArgs } from "../../src/stack/orphan-watchdog.ts";

export { repoRoot };

export interface ReadyChild {
  process: ChildProcess;
  pid: number;
  baseUrl: string;
  /** When it was ready, on the monotonic clock in microseconds (`process.hrtime`, which V8's CPU profiles share). */
  readyAtUs: number;
  /** Resident set size (VmRSS) in KiB, read from /proc. */
  rssKiB(): number;
  /** SIGTERM (graceful stop), then SIGKILL after `timeoutMs`; resolves once exited. */
  stop(timeoutMs?: number): Promise<void>;
}

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  return cpuSecondsOf(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/** The CPU seconds in a process's `/proc/<pid>/stat` line, already read. */
export function cpuSecondsOf(stat: string): number {
  const fields = stat.split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function readRssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/**
 * Spawns `node [nodeArgs] <script>` in the repository and waits for its READY line (bounded by
 * `timeoutMs`). `nodeArgs` carries e.g. `--cpu-prof`, whose profile is written when the child exits
 * normally (`stop()`, not a SIGKILL).
 */
export async function spawnReady(script: string, env: Record<string, string>, options: { timeoutMs?: number; nodeArgs?: string[] } = {}): Promise<ReadyChild> {
  const timeoutMs = options.timeoutMs ?? 90_000;
  const child = spawn(process.execPath, ["--no-deprecation", ...orphanWatchdogArgs(), ...(options.nodeArgs ?? []), script], {
    cwd: repoRoot,
    env: withCompileCache({ ...process.env, ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${script}`);
  const pid = child.pid;
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const recent: string[] = [];
  const keep = (chunk: Buffer) => {
    recent.push(...chunk.toString().split("\n").filter(Boolean));
    while (recent.length > 30) recent.shift();
  };
  child.stderr!.on("data", keep);
  let exited = false;
  const exit = once(child, "exit").then(() => {
    exited = true;
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} not ready within ${timeoutMs} ms:\n${recent.join("\n")}`));
    }, timeoutMs);
    child.stdout!.on("data", (chunk: Buffer) => {
      keep(chunk);
      if (output.length < 10_000) output += chunk.toString();
      const match = /READY (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`${script} exited before it was ready:\n${recent.join("\n")}`));
    });
  });
  return {
    process: child,
    pid,
    baseUrl,
    readyAtUs: Number(process.hrtime.bigint() / 1000n),
    rssKiB: () => readRssKiB(pid),
    async stop(stopTimeoutMs = 20_000) {
      process.removeListener("exit", killOnExit);
      if (exited) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), stopTimeoutMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** The service in a process of its own (test/support/service-process.ts), with the Node flags `npm start` gives it. */
export function spawnService(spec: ServiceProcessSpec, nodeArgs: string[] = []): Promise<ReadyChild> {
  return spawnReady("test/support/service-process.ts", { OFFRAMP_TEST_SERVICE: JSON.stringify(spec) }, { nodeArgs: [...serviceNodeFlags(), ...nodeArgs] });
}
