// A worker of the service's queues (their real options) in a process of its own, on DATABASE_URL, whose
// handlers hold every job and never finish: prints "holding <queue> <job id>" for each. The held-jobs test
// kills it with SIGKILL.
import { startJobs } from "../../../src/jobs/boss.ts";
import { createOrderQueues, ensureDeliveryQueues } from "../../../src/jobs/queues.ts";
import { createLogger } from "../../../src/logger.ts";

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error("DATABASE_URL is required");
const queues = (process.env.QUEUES ?? "").split(",").filter(Boolean);
const boss = await startJobs(databaseUrl, createLogger("silent"));
await createOrderQueues(boss);
await ensureDeliveryQueues(boss, 5000);
for (const queue of queues) {
  await boss.work(queue, { pollingIntervalSeconds: 0.5 }, async ([job]) => {
    process.stdout.write(`holding ${queue} ${job!.id}\n`);
    await new Promise(() => {});
  });
}
process.stdout.write("ready\n");
