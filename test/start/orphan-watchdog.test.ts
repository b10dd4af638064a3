// The watchdog preloaded into the processes the stacks spawn (src/stack/orphan-watchdog.ts): a child whose
// parent dies, even by SIGKILL, stops by itself instead of living on as an orphan.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { orphanWatchdogArgs } from "../../src/stack/orphan-watchdog.ts";
import { until } from "../support/until.ts";
import { isAlive } from "../support/processes.ts";

/** A parent process that spawns an idle child with `childArgs` and prints the child's pid. */
async function parentWithChild(childArgs: string[]): Promise<{ parent: ReturnType<typeof spawn>; childPid: number }> {
  const script = `
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, [...${JSON.stringify(childArgs)}, "-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    console.log(child.pid);
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await once(createInterface({ input: parent.stdout! }), "line")) as [string];
  return { parent, childPid: Number(line) };
}

test("a child with the watchdog stops within seconds once its parent is killed by SIGKILL", async () => {
  const { parent, childPid } = await parentWithChild(orphanWatchdogArgs());
  try {
    // The child is watching while its parent lives.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.ok(isAlive(childPid), "the child stopped while its parent was alive");
    parent.kill("SIGKILL");
    await until(() => !isAlive(childPid), 10_000);
  } finally {
    parent.kill("SIGKILL");
    if (isAlive(childPid)) process.kill(childPid, "SIGKILL");
  }
});
