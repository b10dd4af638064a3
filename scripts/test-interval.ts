// `npm run test:interval`: every trade test file (one that starts a trade stack) on a chain mined as
// production runs (decisions 15, issue 22): a block every 2 s, CHAIN_CONFIRMATIONS=3, the indexer polling
// every second (TRADE_CHAIN=interval, test/support/trade-stack.ts). Files are found by what they call, so a
// new trade test joins without a list to keep; a file that chooses its chain (`mining: ...`, the reorg and
// interval tests) runs in `npm test` as it is. Arguments, if any, replace the set of files.
import { spawn } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { repoRoot } from "../src/paths.ts";

const TRADE_STACK_USE = /\bstart(Trade|Chain)Stack\(|from "\.\.\/support\/trade-paths\.ts"/;
const CHOOSES_ITS_CHAIN = /\bmining: "(auto|interval)"/;

async function tradeTestFiles(): Promise<string[]> {
  const entries = await readdir(path.join(repoRoot, "test"), { recursive: true });
  const files = entries.filter((file) => file.endsWith(".test.ts") && !file.startsWith("escrow/")).sort();
  const chosen: string[] = [];
  for (const file of files) {
    const text = await readFile(path.join(repoRoot, "test", file), "utf8");
    if (TRADE_STACK_USE.test(text) && !CHOOSES_ITS_CHAIN.test(text)) chosen.push(path.join("test", file));
  }
  return chosen;
}

const files = process.argv.length > 2 ? process.argv.slice(2) : await tradeTestFiles();
console.log(`test:interval: ${files.length} trade test files on an interval-mined chain`);
const child = spawn(process.execPath, [path.join(repoRoot, "scripts/test-service.ts"), ...files], {
  cwd: repoRoot,
  stdio: "inherit",
  env: { ...process.env, TRADE_CHAIN: "interval" },
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
process.exitCode = await new Promise<number>((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
