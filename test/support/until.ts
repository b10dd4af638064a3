import { setTimeout as sleep } from "node:timers/promises";

/** Waits, polling every 5 ms, until `check` holds; throws after `timeoutMs`. For in-process loops under test. */
export async function until(check: () => boolean, timeoutMs = 2_000): Promise<void> {
  for (let waited = 0; !check(); waited += 5) {
    if (waited > timeoutMs) throw new Error("timed out");
    await sleep(5);
  }
}

/** `work`'s outcome if it settles within `timeoutMs`, else "waiting": for a request that must not wait on a lock held elsewhere. */
export function withinOrWaiting<T>(work: Promise<T>, timeoutMs = 5_000): Promise<T | "waiting"> {
  return Promise.race([work, new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), timeoutMs).unref())]);
}
