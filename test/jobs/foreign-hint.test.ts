// Another instance's job reaches a worker as a hint (patches/pg-boss+12.38.0.patch): it ends the worker's
// sleep, and the fetch after it runs as an idle poll. A hint that came while the worker was fetching (its job
// committed after the fetch looked) was lost: the worker then slept its whole NOTIFY backstop, 30 s by
// default, with the job waiting (found in CI, 2026-12-01: test/jobs/held-jobs.test.ts's worker holding
// nothing after 30 s). Checked on pg-boss's worker loop itself, with a fetch the test answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { systemClock } from "pg-boss/dist/clock.js";
import Worker from "pg-boss/dist/worker.js";

/** How long the worker sleeps after an empty fetch: pg-boss's NOTIFY backstop. */
const BACKSTOP_MS = 30_000;

/** A worker whose first fetch stays open until the test answers it; every later fetch finds nothing. */
function workerWithHeldFirstFetch() {
  const fetches: number[] = [];
  let answerFirst = () => {};
  const worker = new Worker({
    id: "worker",
    workId: "work",
    name: "queue",
    options: {},
    resolveInterval: () => BACKSTOP_MS,
    fetch: () => {
      fetches.push(Date.now());
      return fetches.length === 1 ? new Promise<never>((resolve) => (answerFirst = () => resolve(null as never))) : Promise.resolve(null as never);
    },
    onFetch: async () => undefined,
    onError: () => undefined,
    clock: systemClock,
  });
  // hint() is the patch's; pg-boss's declarations do not know it.
  const hint = () => (worker as unknown as { hint(): void }).hint();
  return { worker, fetches, hint, answerFirst: () => answerFirst() };
}

async function fetchesAfter(fetches: number[], ms: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return fetches.length;
}

test("a hint that comes while the worker fetches has it fetch again at once, not after its NOTIFY backstop", async () => {
  const { worker, fetches, hint, answerFirst } = workerWithHeldFirstFetch();
  worker.start();
  try {
    assert.equal(await fetchesAfter(fetches, 50), 1);
    hint();
    answerFirst();
    assert.equal(await fetchesAfter(fetches, 1_000), 2);
  } finally {
    await worker.stop();
  }
});

test("with no hint, a worker whose fetch found nothing sleeps its interval", async () => {
  const { worker, fetches, answerFirst } = workerWithHeldFirstFetch();
  worker.start();
  try {
    assert.equal(await fetchesAfter(fetches, 50), 1);
    answerFirst();
    assert.equal(await fetchesAfter(fetches, 1_000), 1);
  } finally {
    await worker.stop();
  }
});
