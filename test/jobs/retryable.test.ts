import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PermanentError, RetryableError, isRetryable } from "../../src/domain/errors.ts";
import { startJobs, type PgBoss } from "../../src/jobs/boss.ts";
import { retryingOnlyWhatCanSucceed } from "../../src/jobs/retry.ts";
import { createLogger } from "../../src/logger.ts";
import { createTestDatabase } from "../support/database.ts";

// A queue handler tells the errors a retry can help (thrown on to pg-boss, retried with the queue's
// backoff) from those it cannot (recorded on the job, not retried), against a real pg-boss.
const QUEUE = "retry-test";

let database: { url: string; drop(): Promise<void> };
let boss: PgBoss;
const attempts = new Map<string, number>();
const permanent: string[] = [];

before(async () => {
  database = await createTestDatabase();
  boss = await startJobs(database.url, createLogger("silent"));
  await boss.createQueue(QUEUE, { retryLimit: 3, retryDelay: 0 });
  await boss.work<{ kind: "retryable" | "permanent" | "unmarked" }>(
    QUEUE,
    { pollingIntervalSeconds: 0.5 },
    retryingOnlyWhatCanSucceed(
      async (job) => {
        const attempt = (attempts.get(job.id) ?? 0) + 1;
        attempts.set(job.id, attempt);
        if (job.data.kind === "permanent") throw new PermanentError("the order does not exist");
        // The first attempt fails; the retry succeeds.
        if (attempt === 1) throw job.data.kind === "retryable" ? new RetryableError("the chain has not reached the deadline") : new Error("connection reset");
      },
      (job) => permanent.push(job.id),
    ),
  );
});
after(async () => {
  await boss?.stop({ graceful: false });
  await database?.drop();
});

async function settled(id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const job = await boss.getJobById(QUEUE, id);
    if (job && (job.state === "completed" || job.state === "failed")) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} did not settle: ${job?.state}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test("a retryable error is thrown on to pg-boss, which retries the job", async () => {
  const id = (await boss.send(QUEUE, { kind: "retryable" }))!;
  const job = await settled(id);
  assert.equal(job.state, "completed");
  assert.equal(job.retryCount, 1);
  assert.equal(attempts.get(id), 2);
});

test("an unmarked error (a dropped connection) is presumed transient and retried", async () => {
  const id = (await boss.send(QUEUE, { kind: "unmarked" }))!;
  const job = await settled(id);
  assert.equal(job.state, "completed");
  assert.equal(attempts.get(id), 2);
});

test("a permanent error is recorded on the job and not retried", async () => {
  const id = (await boss.send(QUEUE, { kind: "permanent" }))!;
  const job = await settled(id);
  assert.equal(job.retryCount, 0);
  assert.equal(attempts.get(id), 1);
  assert.deepEqual(job.output, { permanentFailure: "the order does not exist" });
  assert.deepEqual(permanent, [id]);
});

test("isRetryable: only a PermanentError is final", () => {
  assert.equal(isRetryable(new RetryableError("later")), true);
  assert.equal(isRetryable(new Error("timeout")), true);
  assert.equal(isRetryable(new PermanentError("never")), false);
});
