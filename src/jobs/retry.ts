import type { Job } from "pg-boss";
import { isRetryable, type PermanentError } from "../domain/errors.ts";

// A queue handler rethrows a retryable error to pg-boss, which retries the job with the queue's backoff;
// a permanent one (src/domain/errors.ts) is recorded on the job (its output and the log), not retried.

/** What a permanently failed job records as its output. */
export interface PermanentFailure {
  permanentFailure: string;
}

/**
 * Wraps a queue handler: a retryable error is thrown on to pg-boss (retried), a permanent one is
 * reported through `onPermanent` and the job completes with the failure as its output (not retried).
 */
export function retryingOnlyWhatCanSucceed<Data>(
  handle: (job: Job<Data>) => Promise<void>,
  onPermanent: (job: Job<Data>, error: PermanentError) => void,
): (jobs: Job<Data>[]) => Promise<PermanentFailure | undefined> {
  return async ([job]) => {
    try {
      await handle(job!);
      return undefined;
    } catch (error) {
      if (isRetryable(error)) throw error;
      onPermanent(job!, error as PermanentError);
      return { permanentFailure: (error as Error).message };
    }
  };
}

/** The usual `onPermanent`: an error in the log, with the queue, the job and the reason. */
export function recordPermanentFailure(logger: { error(details: object, message: string): void }, queue: string): (job: Job<unknown>, error: PermanentError) => void {
  return (job, error) => logger.error({ queue, jobId: job.id, data: job.data, err: error }, "job failed permanently: not retried");
}

/** A batch job's outcome with pg-boss's `perJobResults`. */
export interface JobResult {
  id: string;
  status: "completed" | "failed";
  output?: object;
}

/**
 * The batch form of `retryingOnlyWhatCanSucceed` (workers with `perJobResults`): the jobs of a batch are
 * handled concurrently and each is settled on its own; a retryable error fails that job only (retried,
 * reported through `onRetry`), a permanent one completes it with the failure as its output.
 */
export function settlingEachJob<Data>(
  handle: (job: Job<Data>) => Promise<void>,
  onPermanent: (job: Job<Data>, error: PermanentError) => void,
  onRetry: (job: Job<Data>, error: unknown) => void,
): (jobs: Job<Data>[]) => Promise<JobResult[]> {
  return (jobs) =>
    Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        try {
          await handle(job);
          return { id: job.id, status: "completed" };
        } catch (error) {
          if (isRetryable(error)) {
            onRetry(job, error);
            return { id: job.id, status: "failed", output: { message: (error as Error).message } };
          }
          onPermanent(job, error as PermanentError);
          return { id: job.id, status: "completed", output: { permanentFailure: (error as Error).message } satisfies PermanentFailure };
        }
      }),
    );
}
