import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { repeatPass } from "../../src/repeating-pass.ts";
import { until } from "../support/until.ts";

// The in-process loops (escrow reconciliation, the order counters' fold, the treasury read) run one pass
// at a time on an interval, survive a failed pass and stop without leaving a pass running.

/** onError of passes that must not fail: thrown again, it surfaces as an unhandled rejection and fails the test. */
function unexpected(error: unknown): never {
  throw error;
}

test("passes never overlap: a slow pass delays the next by the interval after it ends", async () => {
  let running = 0;
  let most = 0;
  const ends: number[] = [];
  const starts: number[] = [];
  const passes = repeatPass(
    async () => {
      starts.push(Date.now());
      most = Math.max(most, ++running);
      await sleep(40);
      running--;
      ends.push(Date.now());
    },
    { intervalMs: 10, firstDelayMs: 0, onError: unexpected },
  );
  await until(() => starts.length >= 4);
  await passes.stop();
  assert.equal(most, 1);
  for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - ends[i - 1]! >= 9, `pass ${i} started ${starts[i]! - ends[i - 1]!} ms after the last ended`);
});

test("a failed pass is reported and the next one runs", async () => {
  const errors: unknown[] = [];
  let calls = 0;
  const passes = repeatPass(
    async () => {
      if (++calls === 1) throw new Error("RPC down");
    },
    { intervalMs: 5, firstDelayMs: 0, onError: (error) => errors.push(error) },
  );
  await until(() => calls >= 3);
  await passes.stop();
  assert.deepEqual(errors.map((error) => (error as Error).message), ["RPC down"]);
});

test("stop waits for the pass running and no pass starts after it", async () => {
  let finished = false;
  let calls = 0;
  const passes = repeatPass(
    async () => {
      calls++;
      await sleep(50);
      finished = true;
    },
    { intervalMs: 1, firstDelayMs: 0, onError: unexpected },
  );
  await passes.stop();
  assert.equal(finished, true, "stop returned while a pass was running");
  await sleep(30);
  assert.equal(calls, 1);
});

test("the first pass waits for firstDelayMs, or runs at once when it is 0", async () => {
  let calls = 0;
  const later = repeatPass(async () => void calls++, { intervalMs: 60_000, firstDelayMs: 60_000, onError: unexpected });
  await sleep(20);
  assert.equal(calls, 0);
  await later.stop();
  const now = repeatPass(async () => void calls++, { intervalMs: 60_000, firstDelayMs: 0, onError: unexpected });
  assert.equal(calls, 1, "run before repeatPass returned");
  await now.stop();
});

test("an interval given as a function is read after each pass", async () => {
  const delays = [30, 5, 5];
  const starts: number[] = [];
  const passes = repeatPass(async () => void starts.push(Date.now()), { intervalMs: () => delays[starts.length - 1] ?? 5, firstDelayMs: 0, onError: unexpected });
  await until(() => starts.length >= 3);
  await passes.stop();
  assert.ok(starts[1]! - starts[0]! >= 29, `second pass after ${starts[1]! - starts[0]!} ms`);
});
