// Figure 3: GET /orders p99 for a partner with 100,000 orders stored, against the same query for a
// partner with 1,000, both in the same database (bulk-inserted in the shape POST /orders writes); beside
// them the market's order book (GET /market/v1/orders) over the same table.
import { hammer } from "../lib/load.ts";
import { insertBulkOrders } from "../lib/bulk.ts";
import { ensureUser, quoteAndOrder } from "../lib/stack.ts";
import { nowMs, round, summarize } from "../lib/stats.ts";
import { orderBook } from "../../src/market/order-book.ts";
import { MARKET_BOOK_REQUESTS_PER_MINUTE } from "../../src/market/routes.ts";
import { listOrderRows } from "../../src/orders/queries.ts";
import { meets, ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";
import { CONNECTIONS, throughputMeasure } from "./health.ts";

/** A realistic history: most orders finished, a few open. */
export const LIST_MIX = [
  { status: "COMPLETED", percent: 78 },
  { status: "EXPIRED", percent: 12 },
  { status: "REFUNDED", percent: 4 },
  { status: "ACTIVE", percent: 3 },
  { status: "LOCKED", percent: 2 },
  { status: "PENDING_DEPOSIT", percent: 1 },
] as const;

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const bigCount = quick ? 20_000 : 100_000;
  const smallCount = 1_000;
  const durationSeconds = quick ? 3 : 10;
  const warmupSeconds = quick ? 1 : 2;
  const big = await stack.createPartner({ name: "List bench (large)" });
  const small = await stack.createPartner({ name: "List bench (small)" });
  await ensureUser(stack, small, "list-template");
  const template = await quoteAndOrder(stack, small, "list-template", 25);

  const t0 = nowMs();
  await insertBulkOrders(stack.pool, { partnerId: big.id, templateOrderId: template.id, count: bigCount, users: Math.ceil(bigCount / 50), tag: "big", mix: [...LIST_MIX], spreadHours: 90 * 24 });
  await insertBulkOrders(stack.pool, { partnerId: small.id, templateOrderId: template.id, count: smallCount - 1, users: 20, tag: "small", mix: [...LIST_MIX], spreadHours: 90 * 24 });
  await stack.pool.query("ANALYZE orders");
  await stack.pool.query("ANALYZE users");
  const { rows } = await stack.pool.query<{ partner_id: string; n: string }>("SELECT partner_id, count(*) AS n FROM orders WHERE partner_id = ANY($1) GROUP BY partner_id", [[big.id, small.id]]);
  const stored = Object.fromEntries(rows.map((row) => [row.partner_id, Number(row.n)]));
  const { rows: total } = await stack.pool.query<{ n: string }>("SELECT count(*) AS n FROM orders");
  log(`bulk insert ${round((nowMs() - t0) / 1000, 1)} s: large partner ${stored[big.id]}, small partner ${stored[small.id]}, orders table ${total[0]!.n}`);

  // The same database work without HTTP: listOrderRows (page + total) from the bench, one at a time.
  const queryTimes = async (partnerId: string) => {
    const times: number[] = [];
    for (let i = 0; i < 30; i += 1) {
      const t = nowMs();
      await listOrderRows(stack.pool, { partnerId, limit: 20, offset: 0 });
      times.push(nowMs() - t);
    }
    return summarize(times.slice(5));
  };
  const smallQuery = await queryTimes(small.id);
  const bigQuery = await queryTimes(big.id);
  log(`listOrderRows alone: ${stored[small.id]} orders p50 ${smallQuery.p50} ms, ${stored[big.id]} orders p50 ${bigQuery.p50} ms`);

  const run = (key: string) =>
    hammer({ url: `${stack.service.baseUrl}/api/v1/orders`, headers: { "X-API-Key": key }, connections: CONNECTIONS, durationSeconds, warmupSeconds });
  const smallRun = await run(small.apiKey);
  log(`GET /orders, ${stored[small.id]} orders: p99 ${smallRun.latencyMs.p99} ms, ${smallRun.requestsPerSecond} req/s`);
  const bigRun = await run(big.apiKey);
  log(`GET /orders, ${stored[big.id]} orders: p99 ${bigRun.latencyMs.p99} ms, ${bigRun.requestsPerSecond} req/s`);
  // One connection: the request's own latency, without queueing behind the other connections.
  const single = (key: string) =>
    hammer({ url: `${stack.service.baseUrl}/api/v1/orders`, headers: { "X-API-Key": key }, connections: 1, durationSeconds: quick ? 2 : 5, warmupSeconds: 0 });
  const smallSingle = await single(small.apiKey);
  const bigSingle = await single(big.apiKey);
  log(`one connection: ${stored[small.id]} orders p99 ${smallSingle.latencyMs.p99} ms, ${stored[big.id]} orders p99 ${bigSingle.latencyMs.p99} ms`);
  const filtered = await hammer({
    url: `${stack.service.baseUrl}/api/v1/orders?status=ACTIVE&limit=20`,
    headers: { "X-API-Key": big.apiKey },
    connections: CONNECTIONS,
    durationSeconds,
    warmupSeconds: 0,
  });

  // The market's order book (decisions 17) over the same table: ACTIVE orders of every partner,
  // cheapest first, served by the partial index orders_book. It is public: read without a token by
  // visitors, each address sending BOOK_VISITOR_REQUESTS; and by a flood of addresses never seen before.
  const { rows: listed } = await stack.pool.query<{ n: string }>("SELECT count(*) AS n FROM orders WHERE status = 'ACTIVE' AND expires_at > now()");
  const bookQuery = async () => {
    const times: number[] = [];
    for (let i = 0; i < 30; i += 1) {
      const t = nowMs();
      await orderBook(stack.pool, stack.chain.indexerSchema, { limit: 20, offset: 0 });
      times.push(nowMs() - t);
    }
    return summarize(times.slice(5));
  };
  const bookAlone = await bookQuery();
  const book = (connections: number, seconds: number, warmup: number, requestsPerClient = BOOK_VISITOR_REQUESTS) =>
    hammer({ url: `${stack.service.baseUrl}/market/v1/orders`, connections, durationSeconds: seconds, warmupSeconds: warmup, requestsPerClient });
  const bookRun = await book(CONNECTIONS, durationSeconds, warmupSeconds);
  const bookSingle = await book(1, quick ? 2 : 5, 0);
  const bookFlood = await book(CONNECTIONS, durationSeconds, 0, 1);
  log(
    `GET /market/v1/orders (order book, ${listed[0]!.n} listed of ${total[0]!.n}): p99 ${bookRun.latencyMs.p99} ms, one connection p99 ${bookSingle.latencyMs.p99} ms, each request a new address p99 ${bookFlood.latencyMs.p99} ms, query alone p50 ${bookAlone.p50} ms`,
  );

  const asLatency = (label: string, result: typeof bigRun) => {
    const measure = throughputMeasure(label, result);
    return { label, value: result.latencyMs.p99, unit: "ms p99", detail: { ...measure.detail, reqPerSecond: result.requestsPerSecond } };
  };
  const notes = [
    "The database rows also timed alone: the service's own listOrderRows (the page query and the count query, in parallel) called from the bench process 30 times in a row, the first 5 discarded.",
    "GET /orders with no parameters: the first page (limit 20, newest first) and its total, the query partners poll. autocannon from the bench process, 10 connections (latency under load: a request waits behind the others once the service is saturated); the one-connection rows give the request's own latency.",
    BOOK_VISITORS_NOTE,
    `Rows bulk-inserted with SQL (bench/lib/bulk.ts) as copies of a real order made through the API, with their own users and quotes, creation times spread over 90 days, statuses ${LIST_MIX.map((share) => `${share.status} ${share.percent}%`).join(", ")}; then ANALYZE. Both partners' orders are in the same table (${total[0]!.n} rows in all).`,
  ];
  if (quick) notes.push(`Quick run: the large partner has ${bigCount} orders, not 100,000.`);
  return {
    id: 3,
    key: "list-orders",
    title: `GET /orders p99 with ${bigCount.toLocaleString("en-US")} orders stored`,
    status: quick ? "partial" : "measured",
    figure: asLatency(`GET /orders, ${stored[big.id]} orders`, bigRun),
    reference: asLatency(`GET /orders, ${stored[small.id]} orders`, smallRun),
    extra: [
      asLatency(`GET /orders, ${stored[big.id]} orders, one connection`, bigSingle),
      asLatency(`GET /orders, ${stored[small.id]} orders, one connection`, smallSingle),
      asLatency(`GET /orders?status=ACTIVE, ${stored[big.id]} orders`, filtered),
      asLatency(`GET /market/v1/orders (market order book: every partner's listed orders, ${listed[0]!.n} of ${total[0]!.n} stored)`, bookRun),
      asLatency(`GET /market/v1/orders (market order book), one connection`, bookSingle),
      asLatency(`GET /market/v1/orders (market order book), each request from an address never seen before`, bookFlood),
      { label: `database work alone (orderBook: page with the sellers' reputations + count), ${listed[0]!.n} listed of ${total[0]!.n}`, value: bookAlone.p50, unit: "ms p50", detail: { p95Ms: bookAlone.p95, runs: bookAlone.count } },
      { label: `database work alone (listOrderRows: page + count), ${stored[big.id]} orders`, value: bigQuery.p50, unit: "ms p50", detail: { p95Ms: bigQuery.p95, runs: bigQuery.count } },
      { label: `database work alone (listOrderRows: page + count), ${stored[small.id]} orders`, value: smallQuery.p50, unit: "ms p50", detail: { p95Ms: smallQuery.p95, runs: smallQuery.count } },
    ],
    comparison: ratio(bigRun.latencyMs.p99, smallRun.latencyMs.p99),
    params: { largePartnerOrders: stored[big.id], smallPartnerOrders: stored[small.id], ordersTable: Number(total[0]!.n), connections: CONNECTIONS, durationSeconds },
    notes,
  };
}

/**
 * Requests each visitor's address sends to the book in a row: half its allowance of a minute, so no
 * visitor reaches the window's last tenth, where each request is counted in the database before it is
 * answered (rate-limit.ts, syncMargin).
 */
export const BOOK_VISITOR_REQUESTS = MARKET_BOOK_REQUESTS_PER_MINUTE / 2;

export const BOOK_VISITORS_NOTE =
  `The market's order book (GET /market/v1/orders, decisions 17): the first page of ACTIVE listings of every partner, cheapest first, and their total, read without a token as visitors read it, from many client addresses (X-Forwarded-For from 198.18.0.0/15, the service trusting one proxy): each address sends ${BOOK_VISITOR_REQUESTS} requests in a row (half the book's ${MARKET_BOOK_REQUESTS_PER_MINUTE} a minute per address), then the next takes over, so each address's first request of its minute waits for its window to be read from the database and the rest are decided in memory. The row "each request from an address never seen before" is a flood of first visits: every request waits for its address's window (the first requests of one event-loop turn share a statement) and adds a row to rate_limit_windows.`;

export const listOrdersFigure: FigureSpec = {
  id: 3,
  key: "list-orders",
  title: "GET /orders p99 with 100,000 orders stored",
  target: { text: "p99 < 20 ms (10 connections)", met: (o) => meets([o.figure?.value], (p99) => p99 < 20) },
  run,
};
