// How `npm run test:service` times its files, to name the slowest at the end (scripts/file-durations-reporter.ts).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { repoRoot } from "../../src/paths.ts";

test("the reporter records each file's own duration, by its path", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "file-durations-"));
  try {
    await writeFile(path.join(dir, "quick.test.ts"), `import { test } from "node:test"; test("quick", () => {});\n`);
    await writeFile(path.join(dir, "slow.test.ts"), `import { test } from "node:test"; test("slow", () => new Promise((resolve) => setTimeout(resolve, 600)));\n`);
    const out = path.join(dir, "durations.json");
    await promisify(execFile)(process.execPath, ["--test", `--test-reporter=${path.join(repoRoot, "scripts/file-durations-reporter.ts")}`, `--test-reporter-destination=${out}`, "quick.test.ts", "slow.test.ts"], {
      cwd: dir,
      // Without the runner's context, which this test's own process has: a run inside it reports to it alone.
      env: Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== "NODE_TEST_CONTEXT")),
    });
    const durations = JSON.parse(await readFile(out, "utf8")) as Record<string, number>;
    assert.deepEqual(Object.keys(durations).sort(), ["quick.test.ts", "slow.test.ts"]);
    assert.ok(durations["slow.test.ts"]! >= 600, JSON.stringify(durations));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
