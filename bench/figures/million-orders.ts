// Figure 10 (decisions 14): with 1,000,000 orders stored, GET /orders and the market's order book keep
// p99 < 20 ms over 10 connections, the service's RSS stays < 300 MB, and the service is ready no slower
// than on an empty database. It runs on a database of its own on the stack's PostgreSQL server (the
// stack's holds the earlier figures' orders, and the bulk load rebuilds indexes, which no running
// service may see), with the stack's chain and indexer schema name, beside an empty one made the same
// way for the start-up's reference, and drops both at the end.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { insertBulkOrders, insertOpenOrderTimers, withIndexesRebuilt, withServiceQueues } from "../lib/bulk.ts";
import { spawnService, type ReadyChild } from "../lib/child.ts";
import { hammer } from "../lib/load.ts";
import { BENCH_REQUESTS_PER_MINUTE, ensureUser, quoteAndOrder, type BenchStack, type Json, type Partner } from "../lib/stack.ts";
import { median, nowMs, round } from "../lib/stats.ts";
import type pg from "pg";
import type { ServiceProcessSpec } from "../../test/support/service-process.ts";
import { ADMIN_TOKEN } from "../../test/support/constants.ts";
import { createPool } from "../../src/db/pool.ts";
import { meets, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";
import { CONNECTIONS, throughputMeasure } from "./health.ts";
import { BOOK_VISITOR_REQUESTS, BOOK_VISITORS_NOTE, LIST_MIX } from "./list-orders.ts";

/** Start-ups timed on each database (the median is reported). */
const STARTS = 5;
/** "No slower" on a machine whose start-up times vary by tens of milliseconds between two starts. */
const STARTUP_TOLERANCE = 1.1;
/** 300 MB in MiB. */
const RSS_LIMIT_MIB = 300e6 / 2 ** 20;

/**
 * The indexer's tables as Ponder made them in the stack's database (pg_dump of its schema, structure
 * only), empty: the service reads them as it would before any escrow event of these orders, rather than
 * failing on a missing table on every book request (17 ms and 2 ms of CPU a request, measured).
 */
async function copyIndexerTables(stack: BenchStack, pool: pg.Pool): Promise<void> {
  const { stdout } = await promisify(execFile)("pg_dump", ["--schema-only", "--no-owner", "--no-privileges", `--schema=${stack.chain.indexerSchema}`, stack.chain.databaseUrl], { maxBuffer: 64 * 2 ** 20 });
  // pg_dump's psql meta-commands (\restrict) are for psql, not SQL. Its script empties the session's
  // search_path, so it runs on a session of its own that is closed after, never handed back to the pool.
  const client = await pool.connect();
  try {
    await client.query(stdout.split("\n").filter((line) => !line.startsWith("\\")).join("\n"));
  } finally {
    client.release(true);
  }
}

/** A service process on `databaseUrl`, the stack's chain and indexer schema, with the stack's settings. */
function serviceOn(stack: BenchStack, databaseUrl: string): Promise<ReadyChild> {
  const spec: ServiceProcessSpec = { env: stack.serviceEnv, databaseUrl, indexerSchema: stack.chain.indexerSchema, chain: stack.chain.chainSettings };
  return spawnService(spec);
}

/**
 * Milliseconds from spawn to ready (migrations and boot work included) of `STARTS` fresh starts on each
 * database, alternated empty, loaded, loaded, empty, ... so both see the same minutes of a machine whose
 * speed drifts (five of one then five of the other gave 0.71 to 1.36x on unchanged start-up code); the
 * last start, on the loaded database, keeps running.
 */
async function alternatedStarts(stack: BenchStack, urls: { empty: string; loaded: string }): Promise<{ service: ReadyChild; empty: number[]; loaded: number[] }> {
  const ms = { empty: [] as number[], loaded: [] as number[] };
  let service: ReadyChild | undefined;
  for (let i = 0; i < 2 * STARTS; i += 1) {
    await service?.stop();
    const which = i % 4 === 0 || i % 4 === 3 ? "empty" : "loaded";
    const t0 = nowMs();
    service = await serviceOn(stack, urls[which]);
    ms[which].push(round(nowMs() - t0, 0)!);
  }
  return { service: service!, ...ms };
}

/** A new database on the stack's server with the indexer's tables, migrated by a first (untimed) start; its URL. */
async function newDatabase(stack: BenchStack, name: string): Promise<string> {
  await stack.pool.query(`CREATE DATABASE ${name}`);
  const url = new URL(stack.chain.databaseUrl);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), 1);
  try {
    await copyIndexerTables(stack, pool);
  } finally {
    await pool.end();
  }
  await (await serviceOn(stack, url.toString())).stop();
  return url.toString();
}

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const count = quick ? 200_000 : 1_000_000;
  const durationSeconds = quick ? 3 : 10;
  const warmupSeconds = quick ? 1 : 2;
  const name = `bench_million_${randomBytes(4).toString("hex")}`;
  // The empty database is the start-up's reference; the other gets the million.
  const names = [name, `${name}_empty`];
  let opened: pg.Pool | undefined;
  let service: ReadyChild | undefined;
  try {
    const emptyUrl = await newDatabase(stack, `${name}_empty`);
    const databaseUrl = await newDatabase(stack, name);
    const pool = (opened = createPool(databaseUrl, 4));
    service = await serviceOn(stack, databaseUrl);

    const call = async <T = Json>(path: string, method: string, headers: Record<string, string>, body?: unknown) => {
      const response = await fetch(`${service!.baseUrl}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
      return { status: response.status, body: (await response.json()) as T };
    };
    const api = { api: <T = Json>(key: string, method: string, path: string, body?: unknown) => call<T>(`/api/v1${path}`, method, { "X-API-Key": key }, body) };
    const partner = async (label: string): Promise<Partner> => {
      const made = await call<Partner>("/admin/v1/partners", "POST", { Authorization: `Bearer ${ADMIN_TOKEN}` }, { name: label, tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" });
      if (made.status !== 201) throw new Error(`partner creation failed: ${made.status} ${JSON.stringify(made.body)}`);
      await pool.query("UPDATE partners SET limits = limits || jsonb_build_object('requestsPerMinute', $2::int) WHERE id = $1", [made.body.id, BENCH_REQUESTS_PER_MINUTE]);
      return made.body;
    };
    const big = await partner("Million bench");
    await ensureUser(api, big, "million-template");
    const template = await quoteAndOrder(api, big, "million-template", 25);
    await service.stop();
    service = undefined;

    // The million, in batches, with the indexes and foreign keys of orders and quotes put back once at the end; then the
    // open orders' timers in the service's queue, and VACUUM ANALYZE: the steady state of a database
    // that has grown to this size.
    const t0 = nowMs();
    const batch = 250_000;
    await withIndexesRebuilt(pool, ["orders", "quotes"], async () => {
      for (let done = 0; done < count; done += batch) {
        const size = Math.min(batch, count - done);
        await insertBulkOrders(pool, { partnerId: big.id, templateOrderId: template.id, count: size, users: Math.ceil(size / 50), tag: `million-${done}`, mix: [...LIST_MIX], spreadHours: 365 * 24 });
        log(`  ${done + size} orders inserted, ${round((nowMs() - t0) / 1000, 1)} s`);
      }
    });
    const indexedAt = nowMs();
    const timers = await withServiceQueues(databaseUrl, (boss) => insertOpenOrderTimers(pool, boss, big.id, template.id));
    await pool.query("VACUUM ANALYZE orders, quotes, users, pgboss.job");
    // The load's gigabyte of dirty pages written out now, not by the checkpointer during the timed starts:
    // start-up is measured on a database that holds the orders, not on one still writing them.
    await pool.query("CHECKPOINT");
    const loadSeconds = round((nowMs() - t0) / 1000, 1)!;
    const { rows: stored } = await pool.query<{ orders: string; listed: string }>(
      "SELECT (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM orders WHERE status = 'ACTIVE' AND expires_at > now()) AS listed",
    );
    const orders = Number(stored[0]!.orders);
    log(`loaded ${orders} orders in ${loadSeconds} s (indexes and foreign keys back ${round((indexedAt - t0) / 1000, 1)} s in), ${timers} open-order timers, ${stored[0]!.listed} listed`);

    const starts = await alternatedStarts(stack, { empty: emptyUrl, loaded: databaseUrl });
    service = starts.service;
    log(`start-up, alternated: on the empty database ${starts.empty.join(" / ")} ms, with ${orders} orders ${starts.loaded.join(" / ")} ms`);

    const list = await hammer({ url: `${service.baseUrl}/api/v1/orders`, headers: { "X-API-Key": big.apiKey }, connections: CONNECTIONS, durationSeconds, warmupSeconds });
    const book = await hammer({ url: `${service.baseUrl}/market/v1/orders`, connections: CONNECTIONS, durationSeconds, warmupSeconds, requestsPerClient: BOOK_VISITOR_REQUESTS });
    const bookFlood = await hammer({ url: `${service.baseUrl}/market/v1/orders`, connections: CONNECTIONS, durationSeconds, warmupSeconds: 0, requestsPerClient: 1 });
    const rssMiB = round(service.rssKiB() / 1024, 1)!;
    log(`GET /orders p99 ${list.latencyMs.p99} ms, book p99 ${book.latencyMs.p99} ms (each request a new address: ${bookFlood.latencyMs.p99} ms), RSS ${rssMiB} MiB`);

    const emptyMs = median(starts.empty);
    const loadedMs = median(starts.loaded);
    const asLatency = (label: string, result: typeof list) => {
      const measure = throughputMeasure(label, result);
      return { label, value: result.latencyMs.p99, unit: "ms p99", detail: { ...measure.detail, reqPerSecond: result.requestsPerSecond } };
    };
    return {
      id: 10,
      key: "million-orders",
      title: `GET /orders, order book, memory and start-up with ${count.toLocaleString("en-US")} orders stored`,
      status: quick ? "partial" : "measured",
      figure: asLatency(`GET /orders, ${orders} orders`, list),
      reference: { label: "start-up on the empty database (spawn to ready, median)", value: emptyMs, unit: "ms", detail: { starts: starts.empty.join(" / ") } },
      extra: [
        asLatency(`GET /market/v1/orders (order book, ${stored[0]!.listed} listed)`, book),
        asLatency(`GET /market/v1/orders (order book), each request from an address never seen before`, bookFlood),
        { label: `start-up with ${orders} orders (spawn to ready, median)`, value: loadedMs, unit: "ms", detail: { starts: starts.loaded.join(" / ") } },
        { label: "service RSS after its three runs", value: rssMiB, unit: "MiB" },
        { label: `bulk load of ${orders} orders (indexes and foreign keys put back, timers, VACUUM ANALYZE, CHECKPOINT)`, value: loadSeconds, unit: "s", detail: { openOrderTimers: timers } },
      ],
      comparison: `start-up ${round(loadedMs / emptyMs, 2)} x empty`,
      params: { orders, listed: Number(stored[0]!.listed), connections: CONNECTIONS, durationSeconds, listP99Ms: list.latencyMs.p99, bookP99Ms: book.latencyMs.p99, rssMiB, startupMs: loadedMs, emptyStartupMs: emptyMs },
      notes: [
        `A database of its own on the stack's server, with the stack's chain and indexer schema (its tables copied empty from the stack's database with pg_dump, as before any escrow event of these orders). The service process (test/support/service-process.ts, the startService of npm start: migrations, pg-boss, workers, credentials) is timed from spawn to its READY line, ${STARTS} fresh starts on a migrated empty database (a second database, made the same way) and ${STARTS} with the orders stored, after the load, alternated (empty, loaded, loaded, empty, ...) so both see the same minutes; "no slower" allows ${Math.round((STARTUP_TOLERANCE - 1) * 100)}% for the machine's noise.`,
        `One partner holds every order (bench/lib/bulk.ts, copies of a real order, statuses ${LIST_MIX.map((share) => `${share.status} ${share.percent}%`).join(", ")}, over a year), inserted in batches of ${batch} with the secondary indexes and foreign keys of orders and quotes dropped and put back after (every row validated then); each open order has its pg-boss timer; then VACUUM ANALYZE and a CHECKPOINT (the load's dirty pages written before the timed starts rather than during them).`,
        "GET /orders with no parameters (first page, newest first, with its total) and the public book, autocannon, 10 connections; RSS (VmRSS) read right after all three runs.",
        BOOK_VISITORS_NOTE,
      ],
    };
  } finally {
    await service?.stop();
    await opened?.end();
    for (const database of names) await stack.pool.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  }
}

export const millionOrdersFigure: FigureSpec = {
  id: 10,
  key: "million-orders",
  title: "GET /orders, order book, memory and start-up with 1,000,000 orders stored",
  target: {
    text: `GET /orders and book p99 < 20 ms (10 connections), RSS < 300 MB, start-up no slower than empty (x${STARTUP_TOLERANCE})`,
    met: (o) =>
      meets([o.params.listP99Ms, o.params.bookP99Ms, o.params.rssMiB, o.params.startupMs, o.params.emptyStartupMs] as (number | null | undefined)[], (list, bookP99, rss, startup, empty) =>
        list < 20 && bookP99 < 20 && rss < RSS_LIMIT_MIB && startup <= empty * STARTUP_TOLERANCE,
      ),
  },
  run,
};
