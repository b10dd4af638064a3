// The run's results: one record per figure (the figure and its reference, measured in the same run),
// written as bench/results/<date>.md and bench/results/latest.json.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { MachineInfo } from "./machine.ts";
import { renderProfile, type ProfileSummary } from "./profile.ts";

export type Json = Record<string, unknown>;

export interface Measure {
  label: string;
  value: number | null;
  unit: string;
  /** Other numbers of the same measurement (percentiles, counts). */
  detail?: Json;
}

export interface FigureResult {
  id: number;
  key: string;
  title: string;
  /** measured: as specified; partial: measured with a stated limitation; failed: not measured. */
  status: "measured" | "partial" | "failed";
  figure: Measure | null;
  reference: Measure | null;
  /** Further rows shown under the figure (breakdowns, variants). */
  extra: Measure[];
  /** How the figure compares to its reference, in words (e.g. "0.41 x reference"). */
  comparison: string | null;
  params: Json;
  notes: string[];
  seconds: number;
  /** The target (issues 15 and 24) and whether this run met it (null: not measured). */
  target: { text: string; met: boolean | null };
  /** CPU profile of the service processes under this figure's load (`--profile`). */
  profile?: ProfileSummary;
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  mode: "quick" | "full";
  command: string;
  /** The code measured: HEAD when the run started, and tracked files modified beside it. */
  code: { commit: string; modifiedTrackedFiles: number };
  machine: MachineInfo;
  loadAverage: { start: [number, number, number]; end: [number, number, number]; samples: { at: string; figure: string; load: [number, number, number] }[] };
  stack: Json;
  figures: FigureResult[];
}

function show(measure: Measure | null): string {
  if (!measure) return "not measured";
  return measure.value === null ? `${measure.label}: n/a` : `${measure.label}: **${measure.value} ${measure.unit}**`;
}

function metText(met: boolean | null): string {
  return met === null ? "not measured" : met ? "met" : "**missed**";
}

function detailText(detail: Json | undefined): string {
  if (!detail) return "";
  return Object.entries(detail)
    .filter(([, value]) => value !== undefined && value !== null && typeof value !== "object")
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(", ");
}

export function renderMarkdown(report: RunReport): string {
  const lines: string[] = [];
  const m = report.machine;
  lines.push(`# Benchmark run ${report.startedAt.slice(0, 10)} (${report.mode})`, "");
  lines.push(`\`${report.command}\` from ${report.startedAt} to ${report.finishedAt}. Method and meaning of each figure: [docs/benchmarks.md](../../docs/benchmarks.md).`, "");
  lines.push(`Code: ${report.code.commit}${report.code.modifiedTrackedFiles > 0 ? ` with ${report.code.modifiedTrackedFiles} tracked files modified` : ""}.`, "");
  lines.push("## Machine", "");
  lines.push(`- nproc: ${m.nproc} (${m.cpuModel}); memory ${m.totalMemoryGiB} GiB; ${m.platform}, kernel ${m.kernel}`);
  lines.push(`- Node.js ${m.node}; PostgreSQL ${m.postgres ?? "unknown"}`);
  lines.push(`- load average (1/5/15 min) at start ${report.loadAverage.start.join(" / ")}, at end ${report.loadAverage.end.join(" / ")}`);
  lines.push("- load average (1 min) before each figure: " + report.loadAverage.samples.map((s) => `${s.figure} ${s.load[0]}`).join(", "));
  lines.push("", "```", `$ free -h`, m.freeH, "```", "");
  lines.push("## Figures", "");
  lines.push(
    "| # | Figure | Measured | Target (issues 15, 24) | Met | Reference (same run) | Comparison | Load before |",
    "|---|---|---|---|---|---|---|---|",
  );
  const loadBefore = (f: FigureResult) => report.loadAverage.samples.find((sample) => sample.figure === `#${f.id}`)?.load[0] ?? "";
  for (const f of report.figures) {
    const status = f.status === "measured" ? "" : ` (${f.status})`;
    lines.push(`| ${f.id} | ${f.title}${status} | ${show(f.figure)} | ${f.target.text} | ${metText(f.target.met)} | ${show(f.reference)} | ${f.comparison ?? ""} | ${loadBefore(f)} |`);
  }
  lines.push("");
  const missed = report.figures.filter((f) => f.target.met === false);
  if (missed.length > 0) {
    lines.push(
      `Targets missed: ${missed.map((f) => `#${f.id}`).join(", ")}. ${missed.some((f) => f.profile) ? "The profiled ones carry a CPU profile of the service under their load in their section; " : ""}` +
        "`npm run bench -- --profile=<#>` profiles a figure; what limits each figure and what would close it: docs/benchmarks.md.",
      "",
    );
  }
  for (const f of report.figures) {
    lines.push(`### ${f.id}. ${f.title}`, "");
    lines.push(`Status: ${f.status}; ${f.seconds} s. Target: ${f.target.text}: ${metText(f.target.met)}.`, "");
    for (const measure of [f.figure, f.reference, ...f.extra]) {
      if (!measure) continue;
      const detail = detailText(measure.detail);
      lines.push(`- ${show(measure)}${detail ? ` (${detail})` : ""}`);
    }
    const params = detailText(f.params);
    if (params) lines.push(`- parameters: ${params}`);
    for (const note of f.notes) lines.push(`- ${note}`);
    lines.push("");
    if (f.profile) lines.push(`#### CPU profile of the service under this figure's load`, "", ...renderProfile(f.profile));
  }
  return lines.join("\n");
}

export async function writeReport(dir: string, report: RunReport): Promise<{ markdown: string; json: string }> {
  await mkdir(dir, { recursive: true });
  const stamp = report.startedAt.slice(0, 10);
  const suffix = report.mode === "quick" ? "-quick" : "";
  const markdown = path.join(dir, `${stamp}${suffix}.md`);
  const json = path.join(dir, report.mode === "quick" ? "latest-quick.json" : "latest.json");
  await writeFile(markdown, renderMarkdown(report));
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  return { markdown, json };
}
