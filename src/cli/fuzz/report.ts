// The run's report, bench/results/fuzz-<date>.md: requests by category and status, the checks' counts,
// each distinct violation with one request that shows it, and how to run it again.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { EXCLUDED_SCHEMAS, TABLES_READ_AS } from "./snapshot.ts";
import { violationTotal, type FuzzResult } from "./run.ts";

export function renderReport(result: FuzzResult, context: { command: string; target: string; commit?: string; notes?: string[] }): string {
  const lines: string[] = [];
  const total = violationTotal(result);
  lines.push(`# Fuzz run, seed ${result.seed}`, "");
  lines.push(`- Date: ${new Date().toISOString()}`);
  if (context.commit) lines.push(`- Code: ${context.commit}`);
  lines.push(`- Target: ${context.target}`);
  lines.push(`- Documents: ${result.documents.map((d) => `${d.target} (${d.operations} operations, ${result.byTarget[d.target] ?? 0} requests)`).join(", ")}`);
  lines.push(`- Requests: ${result.requests} in ${(result.durationMs / 1000).toFixed(1)} s (${(result.requests / (result.durationMs / 1000)).toFixed(0)}/s)`);
  lines.push(`- Reproduce: \`${context.command}\``, "");
  lines.push("## Checks", "");
  lines.push("| Check | Result |", "|---|---|");
  lines.push(`| 5xx answers | ${result.fiveXx} |`);
  lines.push(`| Error-shape violations (shape, unknown code, status not the code's, no X-Request-Id, no rate-limit headers) | ${result.shapeViolations} |`);
  lines.push(`| Data changed by refused requests | ${result.dataCheck ? result.dataChanges : "not checked (no database URL)"} |`);
  for (const [kind, count] of Object.entries(result.violationCounts)) {
    if (!["5xx"].includes(kind)) lines.push(`| ${kind} | ${count} |`);
  }
  lines.push(`| **All violations** | **${total}** |`, "");
  lines.push(
    `Batches checked for changed data: ${result.batches.checked} (every request of the batch refused); ${result.batches.withAcceptedWrites} batches had an accepted write: ` +
    `the database was let settle after them (no row changed for 1 s and no webhook delivery due within 5 s)${result.batches.settleTimeouts ? ` (${result.batches.settleTimeouts} times it did not settle in 20 s)` : ""}, then their refused requests were sent again on their own and compared ` +
    `(${result.batches.refusalsRechecked} requests in ${result.batches.recheckRounds} sub-batches; ${result.batches.refusalsUnchecked} were accepted on every resend and stay unchecked). ` +
      `Requests refused by Node's HTTP parser before reaching the service (431, empty body): ${result.parserRefusals}.`,
    "",
  );
  if (result.dataCheck) {
    lines.push("Tables left out of the data check:", "");
    for (const [table, why] of Object.entries(result.excludedTables)) lines.push(`- \`${table}\`: ${why}`);
    lines.push(`- Not read at all: ${EXCLUDED_SCHEMAS}.`, "");
    lines.push("Tables compared by what they mean rather than row by row:", "");
    for (const [table, { why }] of Object.entries(TABLES_READ_AS)) lines.push(`- \`${table}\`: ${why}`);
    lines.push("");
  }
  lines.push("## Violations", "");
  if (result.violations.length === 0) lines.push("None.", "");
  for (const v of result.violations) {
    lines.push(`### ${v.kind} (${v.count}×): ${v.operation} [${v.category}]`, "");
    lines.push("```");
    lines.push(v.detail);
    if (v.request) lines.push(`request: ${v.request}`);
    if (v.body !== undefined) lines.push(`answer: ${v.status} ${v.body}`);
    lines.push("```", "");
  }
  lines.push("## Requests by category and status", "");
  const statuses = Object.keys(result.byStatus).sort();
  lines.push(`| Category | ${statuses.join(" | ")} | total |`, `|---|${statuses.map(() => "---:").join("|")}|---:|`);
  for (const [category, row] of Object.entries(result.byCategory).sort()) {
    const sum = Object.values(row).reduce((a, b) => a + b, 0);
    lines.push(`| ${category} | ${statuses.map((s) => row[s] ?? "").join(" | ")} | ${sum} |`);
  }
  lines.push(`| **all** | ${statuses.map((s) => result.byStatus[s]).join(" | ")} | ${result.requests} |`, "");
  lines.push("## Error codes answered", "");
  lines.push(Object.entries(result.byCode).sort((a, b) => b[1] - a[1]).map(([code, n]) => `${code} ${n}`).join(", ") || "none", "");
  const undocumented = Object.entries(result.undocumented).sort((a, b) => b[1] - a[1]);
  if (undocumented.length) {
    lines.push("## Codes answered that the operation's document does not list", "");
    lines.push("Not counted as violations (the code is in the spec and has its status); listed so the documents can be completed.", "");
    for (const [key, n] of undocumented) lines.push(`- ${key} (${n}×)`);
    lines.push("");
  }
  for (const note of context.notes ?? []) lines.push(note, "");
  return lines.join("\n");
}

export async function writeReport(directory: string, text: string): Promise<string> {
  await mkdir(directory, { recursive: true });
  const stamp = new Date().toISOString().replace(/:/g, "-").replace(/\..*/, "");
  const file = path.join(directory, `fuzz-${stamp}.md`);
  await writeFile(file, text);
  return file;
}
