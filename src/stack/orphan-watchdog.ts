// Preloaded (`--import`, orphanWatchdogArgs) into the processes the stacks spawn: Ponder, the Hardhat node,
// and the service processes of the tests and the bench. When the parent dies, even by SIGKILL or by a
// SIGTERM that runs no exit handler, the child is re-parented; it then sends itself SIGINT, so it shuts
// down (Ponder unlocks its schema) instead of living on as an orphan that holds a port, database sessions
// and CPU. A shutdown that hangs (Ponder's has been seen to, for good) is ended 20 s after the SIGINT.
const SELF = import.meta.url;

/** Node arguments that preload this watchdog into a child process. */
export function orphanWatchdogArgs(): string[] {
  return ["--import", SELF];
}

// Only in a process this module was preloaded into, not in the parent that imports orphanWatchdogArgs.
if (process.execArgv.includes(SELF)) {
  const parent = process.ppid;
  let orphanedAt = 0;
  setInterval(() => {
    if (process.ppid === parent) return;
    if (orphanedAt === 0) {
      orphanedAt = Date.now();
      process.kill(process.pid, "SIGINT");
    } else if (Date.now() - orphanedAt > 20_000) {
      process.exit(1);
    }
  }, 1_000).unref();
}
