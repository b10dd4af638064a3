// Figure 7: resident memory of the service process with 10,000 open orders, against the same process
// idle. Order actors are loaded on demand (a row's snapshot is read when an event arrives), so the
// figure should be flat. Both processes are fresh starts of the service child on the stack's database
// and get the same warm-up before their RSS is sampled.
import { insertBulkOrders, insertOpenOrderTimers, withServiceQueues } from "../lib/bulk.ts";
import { median, round } from "../lib/stats.ts";
import { ensureUser, quoteAndOrder, type BenchStack, type Partner } from "../lib/stack.ts";
import { meets, sleep, ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

const OPEN_ORDERS = 10_000;

/** The same requests for both processes: health, one quote and order, list pages. */
async function warmUp(stack: BenchStack, partner: Partner, tag: string): Promise<string> {
  for (let i = 0; i < 200; i += 1) await stack.api(partner.apiKey, "GET", "/health");
  await ensureUser(stack, partner, `mem-${tag}`);
  const order = await quoteAndOrder(stack, partner, `mem-${tag}`, 10);
  for (let i = 0; i < 20; i += 1) await stack.api(partner.apiKey, "GET", `/orders?limit=20&offset=${i * 20}`);
  return order.id;
}

/** Median of `samples` RSS readings one second apart, after `settleMs`, in MiB. */
async function sampleRss(stack: BenchStack, settleMs: number, samples: number): Promise<{ mib: number; readings: number[] }> {
  await sleep(settleMs);
  const readings: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    readings.push(stack.service.rssKiB() / 1024);
    if (i < samples - 1) await sleep(1_000);
  }
  return { mib: round(median(readings), 1)!, readings: readings.map((value) => round(value, 1)!) };
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const settleMs = quick ? 2_000 : 5_000;
  const samples = quick ? 3 : 5;
  const partner = await stack.createPartner({ name: "Memory bench" });

  // A fresh process, warmed up: the idle reference (its warm-up order is the bulk rows' template).
  await stack.restartService();
  const template = await warmUp(stack, partner, "idle");
  const idle = await sampleRss(stack, settleMs, samples);
  log(`idle service RSS ${idle.mib} MiB (pid ${stack.service.pid})`);

  const inserted = await insertBulkOrders(stack.pool, {
    partnerId: partner.id,
    templateOrderId: template,
    count: OPEN_ORDERS,
    users: 500,
    tag: "mem",
    mix: [
      { status: "PENDING_DEPOSIT", percent: 50 },
      { status: "ACTIVE", percent: 50 },
    ],
    spreadHours: 6,
  });
  const timers = await withServiceQueues(stack.chain.databaseUrl, (boss) => insertOpenOrderTimers(stack.pool, boss, partner.id, template));
  const { rows: counts } = await stack.pool.query<{ open: string; jobs: string }>(
    `SELECT (SELECT count(*) FROM orders WHERE status IN ('PENDING_DEPOSIT', 'ACTIVE')) AS open,
            (SELECT count(*) FROM pgboss.job WHERE name = 'orders.timer' AND state = 'created') AS jobs`,
  );
  log(`inserted ${inserted} open orders and ${timers} timers (database: ${counts[0]!.open} open orders, ${counts[0]!.jobs} pending timer jobs)`);

  // A fresh process on the database that now holds them, same warm-up.
  await stack.restartService();
  await warmUp(stack, partner, "open");
  const withOrders = await sampleRss(stack, settleMs, samples);
  log(`service RSS with ${OPEN_ORDERS} open orders ${withOrders.mib} MiB (pid ${stack.service.pid})`);

  // Then read 500 of them one by one (each detail loads its row and timeline) and page through 2,000.
  const { rows: some } = await stack.pool.query<{ id: string }>("SELECT id FROM orders WHERE partner_id = $1 ORDER BY random() LIMIT 500", [partner.id]);
  for (const row of some) await stack.api(partner.apiKey, "GET", `/orders/${row.id}`);
  for (let offset = 0; offset < 2_000; offset += 100) await stack.api(partner.apiKey, "GET", `/orders?limit=100&offset=${offset}`);
  const afterReads = await sampleRss(stack, settleMs, samples);

  return {
    id: 7,
    key: "memory",
    title: "Service RSS with 10,000 open orders",
    status: "measured",
    figure: { label: `RSS, ${OPEN_ORDERS} open orders`, value: withOrders.mib, unit: "MiB", detail: { samples: withOrders.readings.join(" / ") } },
    reference: { label: "RSS, idle service", value: idle.mib, unit: "MiB", detail: { samples: idle.readings.join(" / ") } },
    extra: [{ label: "RSS after reading 500 open orders and 20 list pages", value: afterReads.mib, unit: "MiB", detail: { samples: afterReads.readings.join(" / ") } }],
    comparison: `${ratio(withOrders.mib, idle.mib, "idle")} (${round(withOrders.mib - idle.mib, 1)} MiB)`,
    params: { openOrders: Number(counts[0]!.open), pendingTimerJobs: Number(counts[0]!.jobs), settleMs, samples },
    notes: [
      "Both RSS figures are fresh starts of the service child process (test/support/service-process.ts) after the same warm-up: 200 GET /health, one POST /quotes + POST /orders, 20 GET /orders pages; VmRSS from /proc/<pid>/status, median of the samples taken one second apart after a settle pause.",
      "The open orders are half PENDING_DEPOSIT, half ACTIVE, bulk-inserted in the shape POST /orders writes (bench/lib/bulk.ts), each with its pending pg-boss timer job (DEPOSIT_TIMEOUT / LISTING_TIMEOUT) in the service's queue.",
    ],
  };
}

export const memoryFigure: FigureSpec = {
  id: 7,
  key: "memory",
  title: "Service RSS with 10,000 open orders",
  // 300 MB = 286.1 MiB (the figure is in MiB).
  target: { text: "< 300 MB (286 MiB)", met: (o) => meets([o.figure?.value], (mib) => mib * 2 ** 20 < 300e6) },
  run,
};
