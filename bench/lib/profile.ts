// Where the service's CPU time goes: reads the V8 CPU profiles (`.cpuprofile`, written by
// `node --cpu-prof`) of the service processes that ran under a figure's load, and sums their samples
// by function (self time), by module (a src/ file, an npm package, Node's internals) and, for the
// service's own functions, by total time (the function and everything it called).
//
//   node bench/lib/profile.ts <dir or .cpuprofile>...   # prints the summary as Markdown
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { repoRoot } from "./child.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The `.cpuprofile` JSON (Chrome DevTools protocol Profiler.Profile); times in microseconds. */
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileRow {
  name: string;
  /** Milliseconds. */
  ms: number;
  /** Percent of the busy (non-idle) time. */
  percent: number;
}

export interface ProfileSummary {
  files: string[];
  /** Wall time the profiles cover, summed over processes, ms. */
  profiledMs: number;
  /** Of it, time the process was on the CPU (not idle), ms. */
  busyMs: number;
  /** Self time by function. */
  functions: ProfileRow[];
  /** Self time by module: a src/ file, an npm package, node:internal, or V8's (garbage collector) / (program). */
  modules: ProfileRow[];
  /** Total time (self + callees) of the service's own functions (src/). */
  serviceFunctions: ProfileRow[];
}

const IDLE = "(idle)";

/** "src/workers/webhook-deliveries.ts", "pg", "@koa/router", "node:internal/streams", or the V8 pseudo-function's name. */
function moduleOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName || "(native)";
  // Node's own code by area: node:internal/modules (loading), node:internal/streams, node:net...
  if (url.startsWith("node:")) return url.split("/").slice(0, url.startsWith("node:internal/") ? 2 : 1).join("/");
  if (url.startsWith("wasm:")) return "wasm";
  const file = url.startsWith("file://") ? fileURLToPath(url) : url;
  const packages = file.lastIndexOf("/node_modules/");
  if (packages >= 0) {
    const parts = file.slice(packages + "/node_modules/".length).split("/");
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return path.relative(repoRoot, file);
}

function functionOf(frame: CallFrame): string {
  const module = moduleOf(frame);
  if (!frame.url) return module;
  const file = frame.url.startsWith("node:") ? frame.url : module;
  return `${frame.functionName || "(anonymous)"} (${file}:${frame.lineNumber + 1})`;
}

function rows(totals: Map<string, number>, busyUs: number, limit: number): ProfileRow[] {
  return [...totals.entries()]
    .filter(([name]) => name !== IDLE)
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, us]) => ({ name, ms: Math.round(us / 100) / 10, percent: busyUs > 0 ? Math.round((us / busyUs) * 1000) / 10 : 0 }));
}

async function profileFiles(inputs: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const input of inputs) {
    if ((await stat(input)).isDirectory()) {
      for (const name of (await readdir(input)).sort()) if (name.endsWith(".cpuprofile")) files.push(path.join(input, name));
    } else files.push(input);
  }
  return files;
}

/** The pid in a `--cpu-prof` file name (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile). */
function profilePid(file: string): number | undefined {
  const match = /^CPU\.\d+\.\d+\.(\d+)\./.exec(path.basename(file));
  return match ? Number(match[1]) : undefined;
}

/**
 * Sums the profiles in `inputs` (directories or files), `limit` rows per table. `sinceUs(pid)` (on
 * the monotonic clock in microseconds, `process.hrtime.bigint() / 1000n`, which V8's profile
 * timestamps share on the same machine) leaves out each process's samples before it, e.g. its start.
 */
export async function summarizeProfiles(inputs: string[], options: { limit?: number; sinceUs?: (pid: number | undefined) => number } = {}): Promise<ProfileSummary> {
  const limit = options.limit ?? 15;
  const files = await profileFiles(inputs);
  const self = new Map<string, number>();
  const modules = new Map<string, number>();
  const service = new Map<string, number>();
  let profiledUs = 0;
  let idleUs = 0;
  for (const file of files) {
    const profile = JSON.parse(await readFile(file, "utf8")) as CpuProfile;
    const sinceUs = options.sinceUs?.(profilePid(file)) ?? 0;
    profiledUs += Math.max(0, profile.endTime - Math.max(profile.startTime, sinceUs));
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    // The service functions on each node's stack, computed once per node (a function counted once per sample even when recursive).
    const stacks = new Map<number, string[]>();
    const serviceStack = (id: number): string[] => {
      let names = stacks.get(id);
      if (names) return names;
      const set = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at)!.callFrame;
        if (moduleOf(frame).startsWith("src/")) set.add(functionOf(frame));
      }
      names = [...set];
      stacks.set(id, names);
      return names;
    };
    // A sample lasts until the next one: its duration is the next sample's time delta.
    let at = profile.startTime;
    for (let i = 0; i < profile.samples.length; i += 1) {
      at += profile.timeDeltas[i] ?? 0;
      if (at < sinceUs) continue;
      const us = profile.timeDeltas[i + 1] ?? 0;
      const frame = byId.get(profile.samples[i]!)!.callFrame;
      const name = functionOf(frame);
      if (name === IDLE) idleUs += us;
      self.set(name, (self.get(name) ?? 0) + us);
      const module = moduleOf(frame);
      modules.set(module, (modules.get(module) ?? 0) + us);
      for (const fn of serviceStack(profile.samples[i]!)) service.set(fn, (service.get(fn) ?? 0) + us);
    }
  }
  const busyUs = profiledUs - idleUs;
  return {
    files: files.map((file) => path.relative(repoRoot, file)),
    profiledMs: Math.round(profiledUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    functions: rows(self, busyUs, limit),
    modules: rows(modules, busyUs, limit),
    serviceFunctions: rows(service, busyUs, limit),
  };
}

/** The summary as Markdown: the three tables, each row's share of the busy time. */
export function renderProfile(summary: ProfileSummary): string[] {
  const table = (title: string, list: ProfileRow[]) => [
    `| ${title} | ms | % of busy |`,
    "|---|---|---|",
    ...list.map((row) => `| \`${row.name.replaceAll("|", "\\|")}\` | ${row.ms} | ${row.percent} |`),
    "",
  ];
  const busyShare = summary.profiledMs > 0 ? Math.round((summary.busyMs / summary.profiledMs) * 100) : 0;
  // The event loop's idle share says whether the figure waited (polls, database, chain, network) or computed.
  const reading =
    busyShare < 50
      ? "The service was idle most of the time: the figure is bound by waiting (queue polls, database, chain, network), not by the service's CPU."
      : busyShare >= 80
        ? "The service was on the CPU nearly all the time: the figure is bound by its CPU, spent as below."
        : "The service was on the CPU part of the time: the figure is bound partly by waiting, partly by the CPU spent as below.";
  return [
    `${summary.files.length} profile(s); ${(summary.profiledMs / 1000).toFixed(1)} s profiled, ${(summary.busyMs / 1000).toFixed(1)} s on the CPU (${busyShare}%). ${reading}`,
    "",
    ...table("Self time by module", summary.modules),
    ...table("Self time by function", summary.functions),
    ...table("Total time of the service's own functions (self + callees)", summary.serviceFunctions),
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const inputs = process.argv.slice(2);
  if (inputs.length === 0) {
    console.error("usage: node bench/lib/profile.ts <dir or .cpuprofile>...");
    process.exit(2);
  }
  console.log(renderProfile(await summarizeProfiles(inputs)).join("\n"));
}
