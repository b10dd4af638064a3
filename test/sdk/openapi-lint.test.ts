// The four OpenAPI documents, as the service serves them, pass `@redocly/cli lint` with its recommended
// rules (decisions section 20): one CLI run over the four, so the check stays a couple of seconds.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { startOfflineOrderService } from "../support/trade-stack.ts";
import type { TestService } from "../support/service.ts";

const DOCUMENTS = ["/api/v1/openapi.json", "/admin/v1/openapi.json", "/market/v1/openapi.json", "/dashboard/v1/openapi.json"];
const redocly = fileURLToPath(new URL("../../node_modules/@redocly/cli/bin/cli.js", import.meta.url));

interface Problem {
  ruleId: string;
  severity: "error" | "warn";
  message: string;
  location: { source: { ref: string }; pointer: string }[];
}

let service: TestService;
let directory: string;
before(async () => {
  // With chain settings (no node needed to serve documents) so the market API and every route are mounted.
  service = await startOfflineOrderService();
  directory = await mkdtemp(path.join(tmpdir(), "offramp-openapi-"));
});
after(async () => {
  await service?.close();
  await rm(directory, { recursive: true, force: true });
});

test("the partner, admin, market and dashboard documents pass redocly lint's recommended rules", async () => {
  const files: string[] = [];
  for (const url of DOCUMENTS) {
    const response = await fetch(`${service.baseUrl}${url}`);
    assert.equal(response.status, 200, url);
    const file = path.join(directory, `${url.split("/")[1]}.json`);
    await writeFile(file, await response.text());
    files.push(file);
  }
  // Exit status 1 on an error; the JSON report says which, with warnings too.
  const run = await promisify(execFile)(process.execPath, [redocly, "lint", "--extends=recommended", "--format=json", ...files], {
    cwd: directory,
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? "" }));
  // One JSON report per document, one right after the other ("}{" where one ends and the next starts).
  const reports = run.stdout.split(/(?<=^\})\s*(?=\{$)/m).map((text) => JSON.parse(text) as { totals: { errors: number; warnings: number }; problems: Problem[] });
  assert.equal(reports.length, files.length, `one report per document\n${run.stdout}\n${run.stderr}`);
  const problems = reports.flatMap((report) => report.problems);
  const lines = problems.map((problem) => `${problem.severity} ${problem.ruleId} ${problem.location[0]?.source.ref.split("/").pop()}${problem.location[0]?.pointer ?? ""}: ${problem.message}`);
  console.log(`# redocly lint (recommended), ${files.length} documents: ${problems.filter((problem) => problem.severity === "error").length} errors, ${problems.filter((problem) => problem.severity === "warn").length} warnings${lines.map((line) => `\n#   ${line}`).join("")}`);
  assert.deepEqual(lines.filter((line) => line.startsWith("error")), []);
});
