import { setTimeout as sleep } from "node:timers/promises";

/** Waits, polling every 5 ms, until `check` holds; throws after `timeoutMs`. For in-process loops under test. */
export async function until(check: () => boolean, timeoutMs = 2_000): Promise<void> {
  for (let waited = 0; !check(); waited += 5) {
    if (waited > timeoutMs) throw new Error("timed out");
    await sleep(5);
  }
}
