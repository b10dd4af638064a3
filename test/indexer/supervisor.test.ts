import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { superviseIndexer, type Indexer } from "../../src/stack/indexer-process.ts";

// `npm start` keeps Ponder running: a process that exits on its own (Ponder exits 75 on errors a
// restart may fix, such as its database killed and restarted) is started again. Fake processes here.

type Exit = { code: number | null; signal: NodeJS.Signals | null };

function fakeIndexer(n: number): Indexer & { exit(info: Exit): void; stops: number } {
  let exit: (info: Exit) => void = () => undefined;
  const exited = new Promise<Exit>((resolve) => (exit = resolve));
  const fake = {
    url: `http://127.0.0.1:${42000 + n}`,
    schema: "s",
    process: {} as ChildProcess,
    exited,
    stops: 0,
    exit: (info: Exit) => exit(info),
    async stop() {
      fake.stops += 1;
      exit({ code: 0, signal: null });
    },
  };
  return fake;
}

const silent = { error: () => undefined };
const fast = { firstMs: 10, maxMs: 40 };

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i += 1) await sleep(10);
  assert.ok(check(), what);
}

test("an indexer that exits on its own is started again", async () => {
  const started: ReturnType<typeof fakeIndexer>[] = [];
  const supervised = await superviseIndexer(async () => started[started.push(fakeIndexer(started.length)) - 1]!, silent, fast);
  started[0]!.exit({ code: 75, signal: null });
  await until(() => started.length === 2, "a second process");
  assert.equal(supervised.current(), started[1]);
  await supervised.stop();
  assert.equal(started[1]!.stops, 1);
});

test("a start that fails is tried again until one succeeds", async () => {
  let attempts = 0;
  const started: ReturnType<typeof fakeIndexer>[] = [];
  const supervised = await superviseIndexer(async () => {
    attempts += 1;
    if (attempts > 1 && attempts < 4) throw new Error("schema still locked");
    return started[started.push(fakeIndexer(attempts)) - 1]!;
  }, silent, fast);
  started[0]!.exit({ code: null, signal: "SIGKILL" });
  await until(() => started.length === 2, "started after two failed attempts");
  assert.equal(attempts, 4);
  await supervised.stop();
});

test("after stop() the exit of the stopped process starts nothing", async () => {
  let starts = 0;
  const supervised = await superviseIndexer(async () => {
    starts += 1;
    return fakeIndexer(starts);
  }, silent, fast);
  await supervised.stop();
  await sleep(100);
  assert.equal(starts, 1);
});
