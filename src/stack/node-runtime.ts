import path from "node:path";
import { repoRoot } from "../paths.ts";

/**
 * `env` with Node's on-disk compile cache (NODE_COMPILE_CACHE) for the Node processes it starts, unless
 * already set. Node 24 strips the types of every `.ts` file it loads with a WebAssembly build of swc; the
 * cache keeps the stripped source and compiled code between starts (keyed by each file's contents, so an
 * edit is never served stale), and a process that finds every file there never loads swc: the service
 * starts about 0.35 s sooner and uses about 20 MiB less memory (docs/benchmarks.md, stop 30).
 */
export function withCompileCache(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, NODE_COMPILE_CACHE: env.NODE_COMPILE_CACHE || path.join(repoRoot, "node_modules", ".cache", "node-compile-cache") };
}

/** MiB of one of V8's two young-generation semi-spaces in a service process. */
export const SERVICE_SEMI_SPACE_MIB = 8;

/**
 * Node flags of a process that runs the service (`npm start`'s stack, the bench's and the chaos
 * harness's service processes). V8 sizes the young generation from the machine's memory, up to 32 MiB a
 * semi-space here, and grows it to that under any sustained request rate: the service's RSS rose by
 * about 100 MiB in 10 s of order-book requests from many addresses and stayed there. Capped at
 * SERVICE_SEMI_SPACE_MIB, the same load left it 40 MiB above idle, at the same request rate within the
 * machine's noise (docs/benchmarks.md, stop 31). A `--max-semi-space-size` given to this process or in
 * NODE_OPTIONS is left to rule.
 */
export function serviceNodeFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = [env.NODE_OPTIONS ?? "", ...process.execArgv].join(" ");
  return given.includes("--max-semi-space-size") ? [] : [`--max-semi-space-size=${SERVICE_SEMI_SPACE_MIB}`];
}
