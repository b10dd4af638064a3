export interface RepeatingPass {
  /** Cancels the next pass and waits for the one running, so a shutdown never closes the pool under it. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` in this process, again `intervalMs` after each pass ends (never two at once, so a slow pass
 * delays the next instead of piling up), the first after `firstDelayMs` (0: now). A failed pass goes to
 * `onError` and the next runs on schedule. `intervalMs` may be read anew after each pass (a read that
 * failed is retried sooner than one that succeeded). The timer does not keep the process alive.
 */
export function repeatPass(
  pass: () => Promise<unknown>,
  options: { intervalMs: number | (() => number); firstDelayMs?: number; onError: (error: unknown) => void },
): RepeatingPass {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const interval = typeof options.intervalMs === "number" ? () => options.intervalMs as number : options.intervalMs;
  const run = () => {
    running = pass()
      .then(() => undefined, options.onError)
      .finally(() => {
        running = undefined;
        if (!stopped) schedule(interval());
      });
  };
  const schedule = (delayMs: number) => {
    timer = setTimeout(run, delayMs).unref();
  };
  const firstDelayMs = options.firstDelayMs ?? interval();
  if (firstDelayMs === 0) run();
  else schedule(firstDelayMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
