// Measures how fast the webhook delivery worker drains a burst (issue 15, "webhook deliveries to a
// receiver answering at once"), outside the full bench: a fresh database, the service's own pg-boss
// settings and delivery worker in this process, a receiver answering 200 at once in a child process.
// N `order.created` events are recorded with recordEvent in one transaction; the figure is N divided
// by the time from that commit to the receiver's Nth request.
// Run: node scripts/webhook-drain.ts [N=2000]   (PostgreSQL at TEST_DATABASE_URL or 127.0.0.1:5432)
import { fork } from "node:child_process";
import { once } from "node:events";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../src/config.ts";
import { migrate } from "../src/db/migrate.ts";
import { createPool } from "../src/db/pool.ts";
import { startJobs } from "../src/jobs/boss.ts";
import { createLogger } from "../src/logger.ts";
import { createPartner } from "../src/partners/partners.ts";
import { recordEvent } from "../src/webhooks/outbox.ts";
import { startWebhookDelivery } from "../src/webhooks/worker.ts";
import { createTestDatabase } from "../test/support/database.ts";
import { createOrderFixture } from "../test/webhooks/support/fixtures.ts";

if (process.env.DRAIN_RECEIVER) {
  // The receiver: answers every request 200 at once; tells the parent when the expected count arrived.
  const http = await import("node:http");
  const expected = Number(process.env.DRAIN_RECEIVER);
  let requests = 0;
  let connections = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200).end();
      if (++requests === expected) process.send!({ done: Date.now(), requests, connections });
    });
  });
  server.on("connection", () => connections++);
  server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
  process.on("message", () => process.send!({ requests, connections }));
} else {
  const count = Number(process.argv[2] ?? 2000);
  const receiver = fork(fileURLToPath(import.meta.url), { env: { ...process.env, DRAIN_RECEIVER: String(count) } });
  const [{ port }] = (await once(receiver, "message")) as [{ port: number }];

  const database = await createTestDatabase();
  await migrate(database.url);
  const config = loadConfig({ SANDBOX: "true", DATABASE_URL: database.url });
  const logger = createLogger("warn");
  const pool = createPool(database.url, 10, logger);
  const boss = await startJobs(database.url, logger);
  const delivery = await startWebhookDelivery({ pool, boss, logger, config });

  const { partner } = await createPartner(pool, { name: "Drain", tier: "GROWTH", kycModel: "PARTNER_MANAGED", webhookUrl: `http://127.0.0.1:${port}/hooks` });
  const orders = [];
  for (let i = 0; i < count; i++) orders.push(await createOrderFixture(pool, partner.id));

  const loadBefore = loadavg()[0]!;
  const client = await pool.connect();
  await client.query("BEGIN");
  for (const order of orders) await recordEvent(client, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} });
  const committedAt = Date.now();
  await client.query("COMMIT");
  client.release();
  const [done] = (await once(receiver, "message")) as [{ done: number; requests: number; connections: number }];
  const seconds = (done.done - committedAt) / 1000;
  const loadAfter = loadavg()[0]!;

  // Let the last outcomes commit, then check the records: every delivery DELIVERED after one attempt.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const { rows } = await pool.query<{ status: string; n: number; attempts: number }>(
    "SELECT status, count(*)::int AS n, sum(attempts)::int AS attempts FROM webhook_deliveries GROUP BY status",
  );
  receiver.send("count");
  const [final] = (await once(receiver, "message")) as [{ requests: number; connections: number }];
  console.log(
    JSON.stringify({
      deliveries: count,
      seconds: Number(seconds.toFixed(3)),
      perSecond: Math.round(count / seconds),
      receiverRequests: final.requests,
      receiverConnections: final.connections,
      records: rows,
      concurrencyPerEndpoint: config.webhookConcurrencyPerEndpoint,
      loadAverage1m: { before: loadBefore, after: loadAfter },
    }),
  );

  await delivery.stop();
  await boss.stop({ graceful: false });
  await pool.end();
  receiver.kill();
  await database.drop();
}
