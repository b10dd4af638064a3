import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { ONE_JOB_AT_A_TIME } from "../../src/jobs/queues.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";
import { onFetches, within } from "./support/fetches.ts";

// The order timers' and the payment verifications' workers take one job at a time (ONE_JOB_AT_A_TIME).
// Jobs already due when nobody is listening (timers falling due together announce nothing) are worked one
// after another, not one a polling interval; a worker that found nothing sleeps its interval.
const POLL_SECONDS = 5;
const BACKLOG = 10;

let database: { url: string; drop(): Promise<void> };
let boss: PgBoss;

before(async () => {
  database = await createTestDatabase();
  boss = await startJobs(database.url, createLogger("silent"));
});
after(async () => {
  await boss?.stop({ graceful: false });
  await database?.drop();
});

test(`a worker of one job at a time works ${BACKLOG} jobs already due within one polling interval, then sleeps`, { timeout: 60_000 }, async () => {
  const name = "backlog";
  await boss.createQueue(name);
  await boss.insert(name, Array.from({ length: BACKLOG }, (_, i) => ({ data: { n: i } })));
  const handled: number[] = [];
  let fetches = 0;
  const stop = onFetches(boss, name, () => (fetches += 1));
  try {
    const options = { ...ONE_JOB_AT_A_TIME, localConcurrency: 1, pollingIntervalSeconds: POLL_SECONDS, notifyPollingIntervalSeconds: POLL_SECONDS };
    await boss.work<{ n: number }>(name, options, async ([job]) => {
      handled.push(job!.data.n);
    });
    // Sleeping after each job, the backlog would take BACKLOG - 1 polling intervals.
    assert.ok(await within((POLL_SECONDS - 1) * 1000, () => handled.length === BACKLOG), `${handled.length} of ${BACKLOG} jobs worked within ${POLL_SECONDS - 1} s`);
    // One fetch a job and one that found nothing; then asleep, not fetching in a loop.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.ok(fetches <= BACKLOG + 1, `${fetches} fetches for ${BACKLOG} jobs`);
  } finally {
    stop();
    await boss.offWork(name);
  }
});
