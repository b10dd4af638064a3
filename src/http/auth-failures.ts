import { withTransaction, type Pool, type Queryable } from "../db/pool.ts";

// Limits on failed authentications (admin token, dashboard sign-in and invitations): only failures are
// counted, and an attempt is judged after its credential was checked, so right credentials sent together
// never refuse each other while wrong ones racing each other still get exactly the limit.

/** Where an attempt's failures are counted, and what a refused attempt answers. */
export interface FailureLimit {
  /** Seconds until the window of the first bucket with no failures left ends; undefined while each has some left. */
  exhausted(db: Queryable, buckets: string[]): Promise<number | undefined>;
  /** Counts one failure in each bucket. */
  count(db: Queryable, buckets: string[]): Promise<void>;
  /** The answer to an attempt made once a bucket is used up (429, with Retry-After). */
  refusal(retryAfterSeconds: number): Error;
}

/**
 * A cheap look before the credential's check: an attempt whose buckets are already used up is refused
 * at once, so slow checks (a password hash) are not run for guesses that can no longer succeed.
 * `judgeAttempt` still decides: this read takes no lock.
 */
export async function refuseWhenExhausted(db: Queryable, buckets: string[], limit: FailureLimit): Promise<void> {
  const retryAfter = await limit.exhausted(db, buckets);
  if (retryAfter !== undefined) throw limit.refusal(retryAfter);
}

/**
 * Judges one attempt whose outcome is known (`failure` is the answer of a wrong one, undefined for a
 * right one): under the advisory lock of each bucket (taken in the order of their keys, so two attempts
 * cannot deadlock), it is refused when a bucket has no failures left, passes when right, and is
 * otherwise counted and answered with `failure`. Racing attempts sharing a bucket are so decided one
 * after another against the failures counted so far, while their checks (which may be slow) ran in
 * parallel, outside any lock.
 */
export async function judgeAttempt(pool: Pool, buckets: string[], failure: Error | undefined, limit: FailureLimit): Promise<void> {
  const refusal = await withTransaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(key) FROM (SELECT DISTINCT hashtext(bucket) AS key FROM unnest($1::text[]) AS bucket ORDER BY key) AS keys", [buckets]);
    const retryAfter = await limit.exhausted(tx, buckets);
    if (retryAfter !== undefined) return limit.refusal(retryAfter);
    if (!failure) return undefined;
    await limit.count(tx, buckets);
    return failure;
  });
  if (refusal) throw refusal;
}
