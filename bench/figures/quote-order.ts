// Figure 2: POST /quotes + POST /orders throughput and p99, a pair being one unit, against the
// authenticated health throughput measured by the same closed-loop client at the same concurrency.
import { cpuSharesMeasure, measureCpuShares } from "../lib/cpu-shares.ts";
import { closedLoop, requireNoFailures } from "../lib/load.ts";
import { nowMs, round, summarize } from "../lib/stats.ts";
import { SELLER_CLABE } from "../../test/support/constants.ts";
import { ensureUser } from "../lib/stack.ts";
import { detailNumber, meets, ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

const USERS = 64;
const AMOUNT_USDC = 1;
/** Unmeasured pairs per worker first. */
const WARMUP_PAIRS = 2;

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const concurrency = quick ? 4 : 8;
  const durationMs = quick ? 4_000 : 20_000;
  const maxUnits = quick ? 400 : 5_000;
  // No webhook URL: each order still records its order.created event in the outbox, but no delivery
  // is queued; the delivery worker's ceiling (figure 4's extra row) would otherwise leave a backlog
  // that every later figure would pay for.
  const partner = await stack.createPartner({ name: "Quote-order bench", webhookUrl: null });
  for (let i = 0; i < USERS; i += 1) await ensureUser(stack, partner, `qo-${i}`);
  // The reference has a partner of its own: its requests never spend the figure's budget.
  const referencePartner = await stack.createPartner({ name: "Quote-order bench reference", webhookUrl: null });

  const health = await closedLoop({ concurrency, durationMs, maxUnits: maxUnits * 20, warmupUnits: 20 }, async () => {
    const response = await stack.api(referencePartner.apiKey, "GET", "/health");
    if (response.status !== 200) throw new Error(`health ${response.status} ${JSON.stringify(response.body)}`);
  });
  requireNoFailures("GET /api/v1/health (reference)", health);
  log(`health (node:http, ${concurrency} workers) ${health.unitsPerSecond} req/s, p99 ${health.latencyMs.p99} ms`);

  // Where the 2 cores go while the pairs run, the bench's own client included: what a pair leaves the service.
  const cpuOverPairs = await measureCpuShares(stack.pool, [stack.service.pid]);
  const quoteMs: number[] = [];
  const orderMs: number[] = [];
  const pairs = await closedLoop({ concurrency, durationMs, maxUnits, warmupUnits: WARMUP_PAIRS }, async (_worker, index) => {
    const ref = `qo-${(index + USERS) % USERS}`;
    const t0 = nowMs();
    const quote = await stack.api<{ id: string }>(partner.apiKey, "POST", "/quotes", { type: "SELL", amountUsdc: AMOUNT_USDC, partnerUserRef: ref });
    if (quote.status !== 201) throw new Error(`quote ${quote.status} ${JSON.stringify(quote.body)}`);
    const t1 = nowMs();
    const order = await stack.api(partner.apiKey, "POST", "/orders", { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    if (order.status !== 201) throw new Error(`order ${order.status} ${JSON.stringify(order.body)}`);
    if (index >= 0) {
      quoteMs.push(t1 - t0);
      orderMs.push(nowMs() - t1);
    }
  });
  const cpu = await cpuOverPairs();
  // CPU a pair, which unlike the rate does not depend on how the 2 cores were shared (warm-up pairs included).
  const cpuMsPerPair = (seconds: number) => round((seconds * 1000) / (pairs.units + WARMUP_PAIRS * concurrency), 2)!;
  const serviceCpuMs = cpuMsPerPair(cpu.groups.service ?? 0);
  // Every postgres process, whoever opened its session (the breakdown's PostgreSQL groups together).
  const postgresCpuMs = cpuMsPerPair(Object.entries(cpu.groups).reduce((sum, [group, seconds]) => (group.startsWith("PostgreSQL") ? sum + seconds : sum), 0));
  log(`quote+order ${pairs.unitsPerSecond} pairs/s, p99 ${pairs.latencyMs.p99} ms, failures ${pairs.failures}; CPU a pair: service ${serviceCpuMs} ms, PostgreSQL ${postgresCpuMs} ms`);
  requireNoFailures("POST /quotes + POST /orders", pairs);
  const notes = [
    `Closed loop: ${concurrency} concurrent workers, each sending POST /quotes then POST /orders with the quote's id and waiting for both answers before the next pair; node:http with kept-alive connections from the bench process (bench/lib/http.ts; fetch until stop 53). The reference is GET /api/v1/health measured by the same client, same workers, just before, with a partner of its own.`,
    `Orders of 1 USDC spread over ${USERS} users of an ENTERPRISE partner of its own (requestsPerMinute 100,000,000, so no request is rate limited; volume unlimited; a failed or refused pair fails the figure), so no user reaches a KYC threshold. The partner has no webhook URL: each order records its order.created event in the outbox (same transaction), but no delivery is queued, since the delivery worker drains far fewer than this figure creates (see figure 4) and the backlog would burden the later figures.`,
  ];
  return {
    id: 2,
    key: "quote-order",
    title: "POST /quotes + POST /orders throughput",
    status: "measured",
    figure: { label: "quote + order pairs", value: pairs.unitsPerSecond, unit: "pairs/s", detail: { p50Ms: pairs.latencyMs.p50, p95Ms: pairs.latencyMs.p95, p99Ms: pairs.latencyMs.p99, maxMs: pairs.latencyMs.max, pairs: pairs.units, failures: pairs.failures, seconds: pairs.elapsedSeconds } },
    reference: { label: "GET /api/v1/health, same client", value: health.unitsPerSecond, unit: "req/s", detail: { p50Ms: health.latencyMs.p50, p99Ms: health.latencyMs.p99, requests: health.units, seconds: health.elapsedSeconds } },
    extra: [
      { label: "POST /quotes alone (within the pairs)", value: summarize(quoteMs).p99, unit: "ms p99", detail: { p50Ms: summarize(quoteMs).p50 } },
      { label: "POST /orders alone (within the pairs)", value: summarize(orderMs).p99, unit: "ms p99", detail: { p50Ms: summarize(orderMs).p50 } },
      { label: "service CPU per pair (user + system of its process, the pairs' run)", value: serviceCpuMs, unit: "ms" },
      { label: "PostgreSQL CPU per pair (every postgres process, the pairs' run)", value: postgresCpuMs, unit: "ms" },
      cpuSharesMeasure("CPU a pair by process while the pairs ran (share of all counted)", cpu, pairs.units + WARMUP_PAIRS * concurrency, "pair"),
    ],
    comparison: ratio(pairs.unitsPerSecond, health.unitsPerSecond, "health"),
    params: { concurrency, durationMs, users: USERS, amountUsdc: AMOUNT_USDC },
    notes,
  };
}

export const quoteOrderFigure: FigureSpec = {
  id: 2,
  key: "quote-order",
  title: "POST /quotes + POST /orders throughput",
  target: { text: ">= 400 pairs/s, p99 < 50 ms", met: (o) => meets([o.figure?.value, detailNumber(o.figure, "p99Ms")], (pairs, p99) => pairs >= 400 && p99 < 50) },
  run,
};
