// The short run of `npm run chaos` (decisions section 15): one trade along each of the thirteen paths
// while the service and the indexer are SIGKILLed a few times and every fault of the world around them is
// on (PostgreSQL killed, RPC faults, interval mining with confirmations, reorganisations, drops, a tenfold
// base fee), on short timers. The harness runs as a child process exactly as `npm run chaos` runs it; it
// must find no violation, exit 0, and have caused each fault.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { ChaosReport } from "../../src/cli/chaos/report.ts";
import { PATH_NAMES } from "../../src/cli/chaos/paths.ts";
import { repoRoot } from "../../src/paths.ts";

/** Service settings a developer's shell may hold; the harness sets its own. */
const CONFIG_VARIABLES = ["PORT", "HOST", "DATABASE_URL", "RPC_URL", "CHAIN_ID", "ESCROW_ADDRESS", "USDC_ADDRESS", "SERVICE_PRIVATE_KEY", "ARBITER_PRIVATE_KEY", "ADMIN_TOKEN", "INDEXER_SCHEMA", "CEP_URL"];

test("a short chaos run: every path, a few kills of the service and the indexer, every fault of the world, no violation", { timeout: 15 * 60_000 }, async () => {
  const out = await mkdtemp(path.join(os.tmpdir(), "chaos-test-"));
  try {
    const env = { ...process.env };
    for (const name of CONFIG_VARIABLES) delete env[name];
    const args = ["src/cli/chaos.ts", "--trades", "13", "--kills", "4", "--seconds", "45", "--seed", "npm-test", "--deposit-timeout", "60", "--listing-timeout", "60", "--lock-window", "75", "--settle", "150", "--progress", "15", "--out", out];
    const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    const reportFile = readdirSync(out).find((name) => /^chaos-.*\.json$/.test(name));
    assert.ok(reportFile, `a JSON report was written; output:\n${output}`);
    const report = JSON.parse(readFileSync(path.join(out, reportFile), "utf8")) as ChaosReport;
    assert.deepEqual(report.violations, [], `violations; output:\n${output}`);
    assert.equal(code, 0, output);
    assert.ok(report.kills.total >= 4, `at least 4 kills (${JSON.stringify(report.kills)})`);
    assert.ok(report.kills.service > 0 && report.kills.indexer > 0, "both the service and the indexer were killed");
    for (const name of PATH_NAMES) assert.equal(report.trades.byPath[name]?.planned, 1, `one ${name} trade`);
    assert.ok(report.settled, "quiescent at the end");
    const { faults } = report;
    assert.deepEqual(faults.enabled, ["postgres", "rpc", "interval", "reorg", "drop", "basefee"], "every fault is on by default");
    assert.ok(faults.postgres && faults.postgres.kills >= 1, `PostgreSQL was killed (${JSON.stringify(faults.postgres)})`);
    const rpc = faults.rpc?.counts ?? {};
    assert.ok((rpc.rateLimited ?? 0) + (rpc.serverError ?? 0) + (rpc.resetBefore ?? 0) + (rpc.resetAfter ?? 0) > 0, `the RPC proxies erred (${JSON.stringify(rpc)})`);
    assert.equal(faults.interval?.confirmations, 2, "interval mining with confirmations");
    const chain = faults.chain!;
    assert.ok(chain.reorgs.withinConfirmations >= 1 && chain.reorgs.beyondConfirmations >= 1, `reorganisations within and beyond the confirmations (${JSON.stringify(chain.reorgs)})`);
    assert.ok(chain.baseFeeRises >= 1, "the base fee rose");
    assert.ok(readdirSync(out).some((name) => /^chaos-.*\.md$/.test(name)), "a markdown report was written");
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
