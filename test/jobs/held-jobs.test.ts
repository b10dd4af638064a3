// A job held by a worker that dies (SIGKILL, a lost machine) must come back to the other workers soon.
// Found by `npm run chaos`: pg-boss's default expiry of 15 minutes made a killed worker's order timer 15
// minutes late; then by the two-instance kill test: a transaction's confirmation held by the killed
// instance stayed SENT for its whole 60 s expiry. Every queue now carries a heartbeat: a live worker
// refreshes the jobs it holds, and the supervisor gives back a job whose beat stopped.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import type pg from "pg";
import { SUPERVISE_INTERVAL_SECONDS, type PgBoss } from "../../src/jobs/boss.ts";
import { CHAIN_CONFIRM_QUEUE, CHAIN_SEND_QUEUE, DELIVERY_QUEUE, ORDER_TIMER_QUEUE, PAYMENT_VERIFY_QUEUE } from "../../src/jobs/queues.ts";
import { waitFor } from "../support/trade-stack.ts";
import { startQueuesDatabase } from "./support/queues-database.ts";

const QUEUES = [ORDER_TIMER_QUEUE, CHAIN_SEND_QUEUE, CHAIN_CONFIRM_QUEUE, PAYMENT_VERIFY_QUEUE, DELIVERY_QUEUE];
const workerScript = fileURLToPath(new URL("./support/holding-worker-process.ts", import.meta.url));

let queues: Awaited<ReturnType<typeof startQueuesDatabase>>;
let pool: pg.Pool;
let supervisor: PgBoss;
let worker: ChildProcess | undefined;

before(async () => {
  // This instance runs no worker: only pg-boss's supervisor, as a surviving instance would.
  queues = await startQueuesDatabase(2);
  ({ pool, boss: supervisor } = queues);
});
after(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    worker.kill("SIGKILL");
    await once(worker, "exit");
  }
  await queues?.close();
});

test("every order queue and the delivery queue carry a heartbeat and an expiry", async () => {
  const { rows } = await pool.query<{ name: string; heartbeat_seconds: number | null; expire_seconds: number }>(
    "SELECT name, heartbeat_seconds, expire_seconds FROM pgboss.queue WHERE name = ANY($1) ORDER BY name",
    [QUEUES],
  );
  assert.deepEqual(rows.map((row) => row.name), [...QUEUES].sort());
  for (const row of rows) {
    assert.ok(row.heartbeat_seconds !== null && row.heartbeat_seconds <= 10, `${row.name} heartbeat ${row.heartbeat_seconds}`);
    assert.ok(row.expire_seconds <= 120, `${row.name} expires held jobs after ${row.expire_seconds} s`);
  }
});

test("a job held by a killed worker is given back for its missed heartbeat, before its expiry, on every queue", async () => {
  worker = spawn(process.execPath, [workerScript], { env: { ...process.env, DATABASE_URL: queues.url, QUEUES: QUEUES.join(",") }, stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  worker.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await waitFor("the worker to be ready", async () => (output.includes("ready") ? true : undefined), 30_000);
  const ids: Record<string, string> = {};
  for (const queue of QUEUES) ids[queue] = (await supervisor.send(queue, { test: true }))!;
  await waitFor("the worker to hold every job", async () => (QUEUES.every((queue) => output.includes(`holding ${queue} ${ids[queue]}`)) ? true : undefined), 30_000);

  // How long each job had been held when its worker died: its expiry counts from its start.
  const { rows: held } = await pool.query<{ id: string; held_seconds: number }>(
    "SELECT id, extract(epoch FROM now() - started_on)::float8 AS held_seconds FROM pgboss.job WHERE id = ANY($1)",
    [Object.values(ids)],
  );
  worker.kill("SIGKILL");
  await once(worker, "exit");

  // The supervisor sweeps every 10 s: a job is back within its 10 s heartbeat and one sweep, before its
  // expiry (30 s or more from its start) would have given it back. Where both may have passed by the
  // sweep, which fails expired jobs first, the expiry gives it back: the delivery queue's expiry is the
  // webhook timeout plus 10 s, 15 s here, and on a loaded machine a job may have been held a while before
  // the kill (a CI run, 2026-12-01: chain.send). The job's output tells which gave it back.
  const { rows: settings } = await pool.query<{ name: string; heartbeat_seconds: number; expire_seconds: number }>("SELECT name, heartbeat_seconds, expire_seconds FROM pgboss.queue WHERE name = ANY($1)", [QUEUES]);
  for (const queue of QUEUES) {
    const setting = settings.find((row) => row.name === queue)!;
    const job = await waitFor(`the ${queue} job back from the dead worker`, async () => {
      const { rows } = await pool.query<{ state: string; output: { value?: { message?: string } } | null }>(
        "SELECT state, output FROM pgboss.job WHERE id = $1",
        [ids[queue]],
      );
      return rows[0] && rows[0].state !== "active" ? rows[0] : undefined;
    }, 60_000);
    assert.equal(job.state, "retry", queue);
    const heldSeconds = held.find((row) => row.id === ids[queue])!.held_seconds;
    const heartbeatFirst = heldSeconds + setting.heartbeat_seconds + SUPERVISE_INTERVAL_SECONDS < setting.expire_seconds;
    assert.equal(job.output?.value?.message, heartbeatFirst ? "job heartbeat timeout" : "job timed out", `${queue}, held ${heldSeconds.toFixed(1)} s before the kill`);
  }
});
