// Figure 2's pairs on two checkouts at once: `node bench/side-by-side.ts <other checkout> [rounds]`.
// This machine's speed moves by half between runs minutes apart (figure 2 measured 112-187 pairs/s on the
// same code), so a change is measured here against its base by running both stacks side by side, each
// driven by its own closed loop over the same seconds: whatever the machine does, both see it. The other
// checkout needs its own `node_modules` (a symlink to this one's will do) and compiled contracts.
// Prints, per round and side, pairs/s, latency and the service's CPU per pair.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { cpuSeconds } from "./lib/child.ts";
import { closedLoop } from "./lib/load.ts";
import { ensureUser, quoteAndOrder, startBenchStack, type BenchStack } from "./lib/stack.ts";

const [otherCheckout, roundsArgument] = process.argv.slice(2);
if (!otherCheckout) {
  console.error("usage: node bench/side-by-side.ts <other checkout> [rounds, default 4]");
  process.exit(2);
}
const ROUNDS = Number(roundsArgument ?? 4);
const USERS = 64;
const WORKERS = 4;
const SECONDS = 15;

const other = (await import(pathToFileURL(path.resolve(otherCheckout, "bench/lib/stack.ts")).href)) as { startBenchStack: typeof startBenchStack };
const log = (line: string) => console.error(line);
const sides = [
  { name: `other (${otherCheckout})`, stack: await other.startBenchStack(log) },
  { name: "this checkout", stack: await startBenchStack(log) },
];
try {
  const partners = await Promise.all(
    sides.map(async ({ stack }) => {
      const partner = await stack.createPartner({ name: "Side by side", webhookUrl: null });
      for (let i = 0; i < USERS; i += 1) await ensureUser(stack, partner, `sbs-${i}`);
      return partner;
    }),
  );
  const pairsOn = (stack: BenchStack, side: number) => {
    const cpuBefore = cpuSeconds(stack.service.pid);
    return closedLoop({ concurrency: WORKERS, durationMs: SECONDS * 1000, maxUnits: 1_000_000, warmupUnits: 1 }, async (_worker, index) => {
      await quoteAndOrder(stack, partners[side]!, `sbs-${(index + USERS) % USERS}`, 1);
    }).then((result) => ({ result, cpuMsPerPair: ((cpuSeconds(stack.service.pid) - cpuBefore) * 1000) / (result.units + WORKERS) }));
  };
  console.log(`| Round | Side | Pairs/s | p50 ms | p99 ms | Failed | Service CPU a pair, ms |\n|---|---|---|---|---|---|---|`);
  for (let round = 1; round <= ROUNDS; round += 1) {
    const outcomes = await Promise.all(sides.map(({ stack }, side) => pairsOn(stack, side)));
    outcomes.forEach(({ result, cpuMsPerPair }, side) =>
      console.log(`| ${round} | ${sides[side]!.name} | ${result.unitsPerSecond} | ${result.latencyMs.p50} | ${result.latencyMs.p99} | ${result.failures} | ${cpuMsPerPair.toFixed(2)} |`),
    );
  }
} finally {
  for (const { stack } of sides) await stack.close();
}
