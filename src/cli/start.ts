// `npm start`: the whole sandbox (or service) in one command; see src/stack/start-stack.ts for what runs.
//
// This process only relays: it runs src/stack/start-stack.ts in a child that leads a new process group, forwards
// SIGINT/SIGTERM/SIGHUP to it and exits with its code. Ctrl-C in a terminal signals every process of
// the foreground group; were PostgreSQL, Hardhat and Ponder in it, they would all stop at once while the
// service still uses them. In their own group they get only the ordered shutdown of start-stack.ts, which
// also stops by itself if this relay disappears (even by SIGKILL).
import { spawn } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { serviceNodeFlags, withCompileCache } from "../stack/node-runtime.ts";

const stack = fileURLToPath(new URL("../stack/start-stack.ts", import.meta.url));
const child = spawn(process.execPath, [...process.execArgv, ...serviceNodeFlags(), stack, ...process.argv.slice(2)], {
  detached: true,
  stdio: ["ignore", "inherit", "inherit"],
  env: withCompileCache({ ...process.env, OFFRAMP_START_RELAY_PID: String(process.pid) }),
});
const forward = (signal: NodeJS.Signals) => child.kill(signal);
process.on("SIGINT", forward).on("SIGTERM", forward).on("SIGHUP", forward);
child.once("error", (error) => {
  process.stderr.write(`npm start: could not run ${stack}: ${error.message}\n`);
  process.exit(1);
});
child.once("exit", (code, signal) => process.exit(code ?? 128 + (signal === null ? 0 : os.constants.signals[signal])));
