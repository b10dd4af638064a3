// Figure 8: webhook deliveries per second to a receiver that answers at once. A burst of real outbox
// deliveries (one `order.created` per order, written by the service's own recordEvent in one
// transaction, with their first-attempt jobs, as an order's creation writes them) is handed to the
// service's delivery worker at once; the figure is deliveries received per second from the commit to
// the last arrival, with each delivery's commit-to-receipt latency. Reference: the receiver's own
// capacity, autocannon (its own process) POSTing a real delivery's signed headers and body straight
// to it, same run.
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { recordEvent } from "../../src/webhooks/outbox.ts";
import { insertBulkOrders, withServiceQueues } from "../lib/bulk.ts";
import { hammer } from "../lib/load.ts";
import { nowMs, round, summarize } from "../lib/stats.ts";
import { ensureUser, quoteAndOrder, type BenchStack, type Partner } from "../lib/stack.ts";
import { CONNECTIONS, throughputMeasure } from "./health.ts";
import { meets, ratio, sleep, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

interface BulkOrder {
  id: string;
  ref: string;
}

interface Burst {
  queued: number;
  delivered: number;
  /** Commit to the last arrival (or to the window's end when some did not arrive), seconds. */
  seconds: number;
  perSecond: number | null;
  /** Commit to each arrival, ms. */
  latencies: number[];
  /** Writing the burst's outbox rows (before the commit that hands them over), seconds. */
  writeSeconds: number;
}

/**
 * Records `order.created` for each order in one transaction and waits (at most `windowMs` after the
 * commit) for the receiver to get them. The commit is the moment all are queued: t0 is taken just
 * before it is sent, so each latency includes the commit.
 */
async function burst(stack: BenchStack, boss: PgBoss, partner: Partner, orders: BulkOrder[], windowMs: number): Promise<Burst> {
  const client: pg.PoolClient = await stack.pool.connect();
  const writeStart = nowMs();
  let t0: number;
  try {
    await client.query("BEGIN");
    for (const order of orders) {
      await recordEvent(client, { partnerId: partner.id, orderId: order.id, partnerUserRef: order.ref, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} }, { boss });
    }
    t0 = nowMs();
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  const deadline = t0 + windowMs;
  const arrivals = await Promise.all(orders.map((order) => stack.receiver.waitFor(order.id, "order.created", Math.max(1, deadline - nowMs())).catch(() => undefined)));
  const latencies = arrivals.filter((at): at is number => at !== undefined).map((at) => at - t0);
  const allArrived = latencies.length === orders.length;
  const seconds = (allArrived ? Math.max(...latencies) : windowMs) / 1000;
  return {
    queued: orders.length,
    delivered: latencies.length,
    seconds: round(seconds, 2)!,
    perSecond: round(latencies.length / seconds, 1),
    latencies,
    writeSeconds: round((t0 - writeStart) / 1000, 2)!,
  };
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  // A probe burst sizes the measured one to take about `targetSeconds` at the probe's rate, so the
  // figure takes reasonable time whether the worker sends 8 or 800 a second, and leaves no backlog.
  const probeSize = quick ? 40 : 100;
  const targetSeconds = quick ? 5 : 15;
  const [minBurst, maxBurst] = quick ? [40, 600] : [100, 3_000];
  const windowMs = quick ? 15_000 : 30_000;
  const partner = await stack.createPartner({ name: "Webhook throughput bench" });

  // A real order is the bulk rows' template; its order.created is a real delivery whose signed
  // headers and body the reference replays.
  await ensureUser(stack, partner, "throughput-template");
  const template = await quoteAndOrder(stack, partner, "throughput-template", 1);
  await stack.receiver.waitFor(template.id, "order.created", 60_000);
  const sample = stack.receiver.lastWebhook;
  if (!sample) throw new Error("the receiver kept no webhook to replay");

  await insertBulkOrders(stack.pool, {
    partnerId: partner.id,
    templateOrderId: template.id,
    count: probeSize + maxBurst,
    users: 100,
    tag: "wh8",
    mix: [{ status: "PENDING_DEPOSIT", percent: 100 }],
    spreadHours: 1,
  });
  const { rows: orders } = await stack.pool.query<BulkOrder>(
    "SELECT o.id, u.partner_user_ref AS ref FROM orders o JOIN users u ON u.id = o.user_id WHERE o.partner_id = $1 AND o.id <> $2 ORDER BY o.id",
    [partner.id, template.id],
  );

  const { probe, measured } = await withServiceQueues(stack.chain.databaseUrl, async (boss) => {
    const probe = await burst(stack, boss, partner, orders.slice(0, probeSize), windowMs);
    log(`probe: ${probe.delivered}/${probe.queued} delivered in ${probe.seconds} s (${probe.perSecond}/s)`);
    const size = Math.min(maxBurst, Math.max(minBurst, Math.round((probe.perSecond ?? 0) * targetSeconds)));
    await sleep(500);
    const measured = await burst(stack, boss, partner, orders.slice(probeSize, probeSize + size), windowMs);
    return { probe, measured };
  });
  const latency = summarize(measured.latencies);
  log(`burst of ${measured.queued} (written in ${measured.writeSeconds} s): ${measured.delivered} delivered in ${measured.seconds} s = ${measured.perSecond}/s, latency p50 ${latency.p50} p95 ${latency.p95} ms`);

  // What the service recorded for the measured burst: outcomes and attempts (a retry would show here).
  const ids = orders.slice(probeSize, probeSize + measured.queued).map((order) => order.id);
  const { rows: outcomes } = await stack.pool.query<{ status: string; deliveries: number; attempts: number }>(
    "SELECT status, count(*)::int AS deliveries, sum(attempts)::int AS attempts FROM webhook_deliveries WHERE order_id = ANY($1) GROUP BY status ORDER BY status",
    [ids],
  );
  const duplicates = ids.filter((id) => stack.receiver.count(id, "order.created") > 1).length;

  // Reference: the same signed request straight to the receiver (another order id of the same length,
  // so the replay does not count as a duplicate of the sample's delivery).
  const headers = Object.fromEntries(Object.entries(sample.headers).filter(([name]) => !["host", "content-length", "connection"].includes(name)));
  const body = sample.body.replaceAll(template.id, `ord_${"0".repeat(template.id.length - 4)}`);
  const capacity = await hammer({ url: stack.receiver.url, method: "POST", headers, body, connections: CONNECTIONS, durationSeconds: quick ? 2 : 5, warmupSeconds: 1, inChildProcess: true });
  log(`receiver capacity ${capacity.requestsPerSecond} req/s (${capacity.non2xx} non-2xx, ${capacity.errors} errors)`);

  const allDelivered = measured.delivered === measured.queued;
  const notes = [
    `A probe burst of ${probe.queued} deliveries (${probe.perSecond}/s) sized the measured burst to about ${targetSeconds} s at that rate (between ${minBurst} and ${maxBurst}). Each burst is ${"`order.created`"} for bulk-inserted PENDING_DEPOSIT orders (bench/lib/bulk.ts), written with the service's recordEvent (outbox event, delivery row, first-attempt job) in one transaction, so the whole burst is handed to the delivery worker when it commits; the service's worker sends every delivery, signed, to the receiver.`,
    `Deliveries per second: deliveries received divided by the time from the commit to the last arrival (or by the ${windowMs / 1000} s window when some had not arrived by its end). Latency: commit to each arrival, so it includes the wait behind the rest of the burst.`,
    `Reference: autocannon in its own process, ${CONNECTIONS} keep-alive connections, POSTing a real delivery's headers (signature included) and a body of its size straight to the receiver: the most the receiver (in the bench process) takes.`,
    `Service records of the measured burst: ${outcomes.map((row) => `${row.status} ${row.deliveries} (${row.attempts} attempts)`).join(", ") || "none"}; ${duplicates} received more than once.`,
  ];
  if (!allDelivered) notes.push(`${measured.queued - measured.delivered} deliveries of the burst had not arrived ${windowMs / 1000} s after the commit; the figure counts those that had.`);
  return {
    id: 8,
    key: "webhook-throughput",
    title: "Webhook deliveries per second",
    status: allDelivered ? "measured" : "partial",
    figure: {
      label: `${measured.queued} deliveries queued at once, to the receiver`,
      value: measured.perSecond,
      unit: "deliveries/s",
      detail: { delivered: measured.delivered, queued: measured.queued, seconds: measured.seconds, p50Ms: latency.p50, p95Ms: latency.p95, maxMs: latency.max, writeSeconds: measured.writeSeconds, duplicates },
    },
    reference: throughputMeasure("receiver's own capacity (autocannon POST, same payload)", capacity),
    extra: [{ label: `probe burst of ${probe.queued}`, value: probe.perSecond, unit: "deliveries/s", detail: { delivered: probe.delivered, seconds: probe.seconds, p50Ms: summarize(probe.latencies).p50 } }],
    comparison: ratio(measured.perSecond, capacity.requestsPerSecond, "receiver capacity"),
    params: { probe: probeSize, targetSeconds, minBurst, maxBurst, windowSeconds: windowMs / 1000, payloadBytes: Buffer.byteLength(sample.body) },
    notes,
  };
}

export const webhookThroughputFigure: FigureSpec = {
  id: 8,
  key: "webhook-throughput",
  title: "Webhook deliveries per second",
  target: { text: ">= 500 deliveries/s", met: (o) => meets([o.figure?.value], (perSecond) => perSecond >= 500) },
  run,
};
