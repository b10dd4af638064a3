// npm run fuzz (decisions 15): requests generated from the OpenAPI documents, valid and broken, checked
// for no 5xx, the error shape of the spec, no access without credentials or across tenants, and no data
// changed by a refused request. Starts its own stack on a fresh database, or aims at a running service.
//
//   npm run fuzz -- [--seed N] [--requests N] [--batch N] [--concurrency N]
//   npm run fuzz -- --base-url http://127.0.0.1:3000 --admin-token T [--database-url postgres://...]
//
// Writes bench/results/fuzz-<date>.md; exits 1 on any violation.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { createFixtures, fixtureClient } from "./fuzz/fixtures.ts";
import { renderReport, writeReport } from "./fuzz/report.ts";
import { runFuzz, violationTotal } from "./fuzz/run.ts";
import { startFuzzStack, startReceiver } from "./fuzz/stack.ts";
import { allTargets } from "./fuzz/targets.ts";
import { repoRoot } from "../paths.ts";


const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    requests: { type: "string", default: "10000" },
    batch: { type: "string", default: "20" },
    concurrency: { type: "string", default: "6" },
    "base-url": { type: "string" },
    "admin-token": { type: "string" },
    "database-url": { type: "string" },
    "spoof-client-address": { type: "boolean" },
    "results-dir": { type: "string", default: path.join(repoRoot, "bench/results") },
    help: { type: "boolean", short: "h" },
  },
});

if (values.help) {
  console.log(`npm run fuzz -- [--seed N] [--requests N (default 10000)] [--batch N] [--concurrency N]
  [--base-url URL --admin-token TOKEN [--database-url URL] [--spoof-client-address]] [--results-dir DIR]`);
  process.exit(0);
}

const seed = values.seed !== undefined ? Number(values.seed) >>> 0 : Math.floor(Math.random() * 2 ** 32);
const requests = Number(values.requests);
const log = (line: string) => console.log(`[fuzz] ${line}`);

let commit: string | undefined;
try {
  commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot, encoding: "utf8" }).trim();
} catch {
  // not a git checkout
}

const external = values["base-url"];
const stack = external ? undefined : await startFuzzStack(log);
const receiver = external ? await startReceiver() : undefined;
const baseUrl = external ?? stack!.baseUrl;
const adminToken = values["admin-token"] ?? process.env.ADMIN_TOKEN ?? stack?.adminToken;
if (!adminToken) throw new Error("--admin-token (or ADMIN_TOKEN) is needed with --base-url");
const databaseUrl = values["database-url"] ?? stack?.databaseUrl;

let exitCode: number;
try {
  log(`seed ${seed}, ${requests} requests against ${baseUrl}`);
  const tag = `s${seed}-${Date.now().toString(36)}`;
  const client = fixtureClient(baseUrl, adminToken);
  const fixtures = await createFixtures(client, { tag, webhookUrl: stack?.webhookUrl ?? receiver!.url, log });
  log("fixtures: market buyers and dashboard members");
  const result = await runFuzz({
    baseUrl,
    targets: await allTargets(baseUrl, client, fixtures, { adminToken, tag }),
    fixtures,
    databaseUrl,
    seed,
    requests,
    batchSize: Number(values.batch),
    concurrency: Number(values.concurrency),
    spoofClientAddress: external ? (values["spoof-client-address"] ?? false) : true,
    log,
  });
  const command = external ? `npm run fuzz -- --seed ${seed} --requests ${requests} --base-url ${baseUrl} ...` : `npm run fuzz -- --seed ${seed} --requests ${requests}`;
  const report = renderReport(result, { command, target: external ? baseUrl : "own stack (Hardhat node, Ponder, fresh database, service in this process)", commit });
  const file = await writeReport(values["results-dir"]!, report);
  const total = violationTotal(result);
  log(`${result.requests} requests in ${(result.durationMs / 1000).toFixed(0)} s: ${result.fiveXx} 5xx, ${result.shapeViolations} shape violations, ${result.dataChanges} data changes by refused requests, ${total} violations in all (seed ${seed})`);
  log(`report: ${path.relative(process.cwd(), file)}`);
  exitCode = total === 0 ? 0 : 1;
} finally {
  await receiver?.close();
  await stack?.close();
}
process.exit(exitCode);
