import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Job, JobResult } from "pg-boss";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../db/pool.ts";
import type { PgBoss } from "../jobs/boss.ts";
import type { Logger } from "../logger.ts";
import { closeWebhookConnections, postWebhook, type WebhookResponse } from "../webhooks/http-sender.ts";
import { DELIVERY_QUEUE, deliveryQueueOptions, DUE_FIRST, ensureDeliveryQueues, SWEEP_QUEUE, type DeliveryJob } from "../jobs/queues.ts";
import { enqueueAttempts } from "../webhooks/queue.ts";
import { webhookHeaders } from "../webhooks/signature.ts";

/** The configuration the delivery worker reads (decisions section 1 names). */
export interface WebhookDeliveryConfig {
  webhookRetryDelaysSeconds: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  webhookConcurrencyPerEndpoint: number;
}

export interface WebhookDeliveryOptions {
  pool: Pool;
  boss: PgBoss;
  logger: Logger;
  config: WebhookDeliveryConfig;
  /** Jobs taken per fetch. Default 100. */
  batchSize?: number;
  /** Deliveries this process holds at once (sending or waiting for their endpoint or order). Default 5000. */
  maxHeld?: number;
  /** Default 0.5 s: the floor for retries falling due (new deliveries wake the workers at once). */
  pollingIntervalSeconds?: number;
  /** How long a claim lasts unless renewed: a crashed process's deliveries are retried this long after. Default 20 s. */
  leaseSeconds?: number;
}

export interface WebhookDelivery {
  /** Stops taking jobs, hands back the deliveries not yet sent, lets those on the wire finish. */
  stop(): Promise<void>;
}

/** The wait before attempt `failures + 1`, after `failures` failed attempts. */
export function retryDelaySeconds(delays: number[], failures: number): number {
  return delays[failures - 1] ?? delays.at(-1) ?? 0;
}

/** A delivery this process has claimed for its next attempt. */
interface Held {
  id: string;
  partnerId: string;
  orderId: string;
  sequence: number;
  series: number;
  /** Attempts made before this one. */
  attempts: number;
  maxAttempts: number;
  /** No attempt of this delivery has finished yet: it goes out only after the order's earlier events' first attempts. */
  firstAttempt: boolean;
  body: string;
  url: string | null;
  secret: string;
  endpoint: Endpoint;
  /** waiting: for an earlier event of its order; queued: for a slot of its endpoint; then sending, then recording. */
  state: "waiting" | "queued" | "sending" | "recording";
}

/** One partner's webhook endpoint as this process sees it. */
interface Endpoint {
  key: string;
  /** Attempts on the wire (at most the cap). */
  active: number;
  queue: Held[];
  held: number;
  /** Moving average of an attempt's duration, to size how much of this endpoint's backlog to hold. */
  averageMs: number;
}

interface Outcome {
  held: Held;
  response: WebhookResponse;
  startedAt: Date;
  finishedAt: Date;
}

/** An outcome as written: the attempt's number and what it makes of the delivery. */
interface Step extends Outcome {
  attempt: number;
  status: "DELIVERED" | "FAILED" | "PENDING";
  nextAttemptAt: Date | null;
}

interface ClaimedRow {
  id: string;
  partner_id: string;
  order_id: string;
  sequence: number;
  series: number;
  attempts: number;
  max_attempts: number;
  first_attempt: boolean;
  body: string;
  webhook_url: string | null;
  webhook_secret: string;
  blocked: boolean;
}

/** Attempt outcomes as a table `o` ($1-$11, built by outcomeValues): what is written for each. */
const OUTCOMES = `o AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::int[])
      AS o(id, series, attempt, status, started_at, finished_at, next_attempt_at, delivered_at, error_message, url, response_status))`;

/** Logs the attempts of OUTCOMES whose delivery the named CTE (returning `id`) wrote. */
const logAttemptsOf = (written: string) => `
  INSERT INTO webhook_delivery_attempts (delivery_id, series, attempt, started_at, finished_at, url, response_status, error_message)
  SELECT o.id, o.series, o.attempt, o.started_at, o.finished_at, o.url, o.response_status, o.error_message FROM o JOIN ${written} ON ${written}.id = o.id
  ON CONFLICT DO NOTHING`;

/** Held deliveries of an endpoint: enough for about this long of its observed pace, so a slow endpoint holds few. */
const HOLD_SECONDS = 2;
const INITIAL_AVERAGE_MS = 100;
/** A first attempt whose earlier event is held by another process looks again after this. */
const ORDER_WAIT_MS = 500;
const RECOVERY_INTERVAL_MS = 5000;

/**
 * Sends webhook attempts for this process. Jobs are fetched in batches; one statement claims their
 * deliveries (claimed_by/claimed_until on the row, no lock held across the HTTP call), and the attempts
 * run concurrently: at most `webhookConcurrencyPerEndpoint` on the wire per partner endpoint, each over a
 * kept-alive connection, and an order's first attempts one after another in `sequence` order. Outcomes
 * are written in group commits: the record, the attempt log and the next attempt's job together, with the
 * claim released. A claim is renewed while held; a process that dies stops renewing, and any worker's
 * recovery pass enqueues those deliveries' attempts again once the lease has passed (at least once,
 * never lost).
 */
class DeliveryDispatcher {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")}`;
  private readonly held = new Map<string, Held>();
  private readonly endpoints = new Map<string, Endpoint>();
  /** Held first attempts per order, in sequence order: only the first of each may go. */
  private readonly orders = new Map<string, Held[]>();
  private outcomes: Outcome[] = [];
  private flushing: Promise<void> | null = null;
  private roomWaiters: (() => void)[] = [];
  private drainWaiters: (() => void)[] = [];
  /** Set at shutdown: batches still being fetched are handed back to pg-boss, not claimed. */
  private intakeClosed = false;
  private stopping = false;
  private readonly cap: number;
  private readonly pool: Pool;
  private readonly boss: PgBoss;
  private readonly logger: Logger;
  private readonly config: WebhookDeliveryConfig;
  private readonly maxHeld: number;
  private readonly leaseSeconds: number;

  constructor(deps: { pool: Pool; boss: PgBoss; logger: Logger; config: WebhookDeliveryConfig; maxHeld: number; leaseSeconds: number }) {
    ({ pool: this.pool, boss: this.boss, logger: this.logger, config: this.config, maxHeld: this.maxHeld, leaseSeconds: this.leaseSeconds } = deps);
    this.cap = deps.config.webhookConcurrencyPerEndpoint;
  }

  /**
   * Takes a fetched batch: claims what is each delivery's next step, hands the claimed to the senders,
   * and settles each job: completed (claimed, deferred with a new job, or stale) or failed (the delivery
   * is held by another attempt right now: pg-boss tries the job again later, as for a crash).
   */
  async take(jobs: Job<DeliveryJob>[]): Promise<JobResult[]> {
    while (this.held.size >= this.maxHeld && !this.intakeClosed) await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    if (this.intakeClosed) return jobs.map((job) => ({ id: job.id, status: "failed", output: { message: "the worker is stopping" } }));
    const { claimed, busy } = await this.claim(jobs.map((job) => job.data));
    for (const row of claimed) this.admit(row);
    return jobs.map((job) =>
      busy.has(job.data.deliveryId)
        ? { id: job.id, status: "failed", output: { message: `delivery ${job.data.deliveryId} has an attempt in flight` } }
        : { id: job.id, status: "completed" },
    );
  }

  /**
   * The claim is one statement, committed on its own: a process that dies after it holds its claims until
   * their lease passes, as one that dies while sending does (the recovery pass takes them up). What follows
   * it, deferrals and jobs not claimed, is written in one transaction, only when there is any.
   */
  private async claim(jobs: DeliveryJob[]): Promise<{ claimed: ClaimedRow[]; busy: Set<string> }> {
    const { rows } = await this.pool.query<ClaimedRow>(
      `WITH job AS (
           SELECT DISTINCT * FROM unnest($1::text[], $2::int[], $3::int[]) AS j(delivery_id, series, attempt)
         ), next_step AS (
           SELECT d.id FROM webhook_deliveries d JOIN job ON job.delivery_id = d.id
            WHERE d.status = 'PENDING' AND d.series = job.series AND d.attempts = job.attempt - 1
              AND d.next_attempt_at <= clock_timestamp() + interval '1 second'
              AND (d.claimed_by IS NULL OR d.claimed_until < clock_timestamp())
            FOR UPDATE OF d SKIP LOCKED
         )
         UPDATE webhook_deliveries d
            SET claimed_by = $4, claimed_until = clock_timestamp() + make_interval(secs => $5)
           FROM next_step, webhook_events e, partners p
          WHERE d.id = next_step.id AND e.id = d.event_id AND p.id = d.partner_id
         RETURNING d.id, d.partner_id, d.order_id, d.sequence, d.series, d.attempts, d.max_attempts,
                   d.first_attempted_at IS NULL AS first_attempt, e.body, p.webhook_url, p.webhook_secret,
                   d.first_attempted_at IS NULL AND EXISTS (
                     SELECT 1 FROM webhook_deliveries w
                      WHERE w.order_id = d.order_id AND w.sequence < d.sequence AND w.first_attempted_at IS NULL
                        AND w.claimed_by IS DISTINCT FROM $4 AND w.id NOT IN (SELECT id FROM next_step)) AS blocked`,
      [jobs.map((j) => j.deliveryId), jobs.map((j) => j.series), jobs.map((j) => j.attempt), this.owner, this.leaseSeconds],
    );

    // First attempts wait for every earlier event of the order: claimed by this statement or held already
    // by this process, they wait in memory (the statement sees the rows it claims as they were, hence
    // next_step); one whose earlier event is held elsewhere or not yet taken (blocked) is deferred.
    const blocked = new Set(rows.filter((row) => row.blocked).map((row) => row.id));

    const claimed: ClaimedRow[] = [];
    const deferred: { row: ClaimedRow; startAfter: Date }[] = [];
    const deferredOrders = new Set<string>();
    const extraHeld = new Map<string, number>();
    for (const row of [...rows].sort((a, b) => a.sequence - b.sequence)) {
      const endpoint = this.endpoint(row.partner_id);
      const holding = endpoint.held + (extraHeld.get(endpoint.key) ?? 0);
      let delayMs: number | undefined;
      if (blocked.has(row.id) || (row.first_attempt && deferredOrders.has(row.order_id))) delayMs = ORDER_WAIT_MS;
      else if (holding >= this.holdLimit(endpoint)) delayMs = Math.min(30_000, Math.max(250, (holding / this.cap) * endpoint.averageMs));
      if (delayMs === undefined) {
        claimed.push(row);
        extraHeld.set(endpoint.key, (extraHeld.get(endpoint.key) ?? 0) + 1);
      } else {
        deferred.push({ row, startAfter: new Date(Date.now() + delayMs) });
        if (row.first_attempt) deferredOrders.add(row.order_id);
      }
    }
    const taken = new Set(rows.map((row) => row.id));
    const rest = jobs.filter((job) => !taken.has(job.deliveryId));
    if (deferred.length === 0 && rest.length === 0) return { claimed, busy: new Set() };
    const busy = await withTransaction(this.pool, async (tx) => {
      if (deferred.length > 0) await this.defer(tx, deferred);
      return rest.length > 0 ? this.settleUnclaimed(tx, rest) : new Set<string>();
    });
    return { claimed, busy };
  }

  /** Claimed attempts that must wait (their order's earlier event, their endpoint's cap): released, and enqueued again for later. */
  private async defer(tx: PoolClient, deferred: { row: ClaimedRow; startAfter: Date }[]): Promise<void> {
    await tx.query("UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL WHERE id = ANY($1::text[]) AND claimed_by = $2", [
      deferred.map((d) => d.row.id),
      this.owner,
    ]);
    await enqueueAttempts(
      this.boss,
      tx,
      deferred.map(({ row, startAfter }) => ({ job: { deliveryId: row.id, series: row.series, attempt: row.attempts + 1 }, startAfter })),
    );
  }

  /**
   * Jobs not claimed: stale ones end here; one that is the next step but not due yet is enqueued for its
   * time; one whose delivery is held by an attempt right now is returned (busy), to be failed and tried
   * again later.
   */
  private async settleUnclaimed(tx: PoolClient, rest: DeliveryJob[]): Promise<Set<string>> {
    const { rows: nextSteps } = await tx.query<{ id: string; series: number; attempt: number; next_attempt_at: Date; due: boolean }>(
      `SELECT DISTINCT d.id, job.series, job.attempt, d.next_attempt_at, d.next_attempt_at <= clock_timestamp() + interval '1 second' AS due
           FROM unnest($1::text[], $2::int[], $3::int[]) AS job(delivery_id, series, attempt)
           JOIN webhook_deliveries d ON d.id = job.delivery_id
          WHERE d.status = 'PENDING' AND d.series = job.series AND d.attempts = job.attempt - 1`,
      [rest.map((j) => j.deliveryId), rest.map((j) => j.series), rest.map((j) => j.attempt)],
    );
    const early = nextSteps.filter((step) => !step.due);
    await enqueueAttempts(
      this.boss,
      tx,
      early.map((step) => ({ job: { deliveryId: step.id, series: step.series, attempt: step.attempt }, startAfter: step.next_attempt_at })),
    );
    return new Set(nextSteps.filter((step) => step.due).map((step) => step.id));
  }

  private endpoint(key: string): Endpoint {
    let endpoint = this.endpoints.get(key);
    if (!endpoint) {
      endpoint = { key, active: 0, queue: [], held: 0, averageMs: INITIAL_AVERAGE_MS };
      this.endpoints.set(key, endpoint);
    }
    return endpoint;
  }

  private holdLimit(endpoint: Endpoint): number {
    return Math.max(2 * this.cap, Math.ceil((this.cap * HOLD_SECONDS * 1000) / endpoint.averageMs));
  }

  private admit(row: ClaimedRow): void {
    const endpoint = this.endpoint(row.partner_id);
    const held: Held = {
      id: row.id,
      partnerId: row.partner_id,
      orderId: row.order_id,
      sequence: row.sequence,
      series: row.series,
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
      firstAttempt: row.first_attempt,
      body: row.body,
      url: row.webhook_url,
      secret: row.webhook_secret,
      endpoint,
      state: "waiting",
    };
    this.held.set(held.id, held);
    endpoint.held++;
    if (held.firstAttempt) {
      const chain = this.orders.get(held.orderId) ?? [];
      chain.push(held);
      chain.sort((a, b) => a.sequence - b.sequence);
      this.orders.set(held.orderId, chain);
      // Only the order's earliest held first attempt may go; an earlier one may have just arrived.
      if (chain[0] !== held) return;
    }
    this.enqueue(held);
  }

  private enqueue(held: Held): void {
    held.state = "queued";
    held.endpoint.queue.push(held);
    this.pump(held.endpoint);
  }

  private pump(endpoint: Endpoint): void {
    while (!this.stopping && endpoint.active < this.cap && endpoint.queue.length > 0) {
      const held = endpoint.queue.shift()!;
      endpoint.active++;
      held.state = "sending";
      void this.send(held);
    }
  }

  private async send(held: Held): Promise<void> {
    const startedAt = new Date();
    let response: WebhookResponse;
    if (!held.url) {
      response = { ok: false, status: null, errorMessage: "The partner has no webhook URL configured" };
    } else {
      // Signed at send time with the partner's secret as claimed: a rotation applies to the next attempt.
      response = await postWebhook({
        url: held.url,
        body: held.body,
        headers: webhookHeaders(held.id, held.secret, startedAt, held.body),
        timeoutMs: this.config.webhookTimeoutMs,
        allowPrivate: this.config.webhookAllowPrivate,
      });
    }
    const finishedAt = new Date();
    const endpoint = held.endpoint;
    endpoint.active--;
    endpoint.averageMs = 0.8 * endpoint.averageMs + 0.2 * Math.max(1, finishedAt.getTime() - startedAt.getTime());
    held.state = "recording";
    this.outcomes.push({ held, response, startedAt, finishedAt });
    this.pump(endpoint);
    this.flushSoon();
  }

  /** Group commit: every outcome gathered while the previous commit ran goes in the next one. */
  private flushSoon(): void {
    if (this.flushing || this.outcomes.length === 0) return;
    const batch = this.outcomes;
    this.outcomes = [];
    this.flushing = this.record(batch)
      .then(
        () => {
          for (const outcome of batch) this.release(outcome.held);
        },
        async (error: unknown) => {
          // Kept and written again: the claims stay renewed meanwhile, so nothing is sent twice for it.
          this.logger.error({ err: error, outcomes: batch.length }, "recording webhook attempts failed; retrying");
          this.outcomes = [...batch, ...this.outcomes];
          await new Promise((resolve) => setTimeout(resolve, 1000));
        },
      )
      .finally(() => {
        this.flushing = null;
        this.flushSoon();
      });
  }

  /**
   * Writes outcomes: each delivery the process still holds gets its attempt logged and its claim
   * released; where the attempt is still the delivery's next step (no redelivery started a new series
   * meanwhile) the record takes the outcome and a retry's job is enqueued for its time. Each statement
   * writes a delivery's record with its attempt's log line; a batch with retries to enqueue runs in one
   * transaction with their jobs, one without (every attempt delivered, or failed for good) needs none.
   */
  private async record(batch: Outcome[]): Promise<void> {
    const rows: Step[] = batch.map(({ held, response, startedAt, finishedAt }) => {
      const attempt = held.attempts + 1;
      let status: "DELIVERED" | "FAILED" | "PENDING";
      let nextAttemptAt: Date | null = null;
      if (response.ok) status = "DELIVERED";
      else if (attempt >= held.maxAttempts) status = "FAILED";
      else {
        status = "PENDING";
        nextAttemptAt = new Date(finishedAt.getTime() + retryDelaySeconds(this.config.webhookRetryDelaysSeconds, attempt) * 1000);
      }
      return { held, response, startedAt, finishedAt, attempt, status, nextAttemptAt };
    });
    const write = async (db: Queryable) => {
      const recorded = await this.recordSteps(db, rows);
      const others = rows.filter((r) => !recorded.has(r.held.id));
      if (others.length > 0) await this.releaseOthers(db, others);
      const retries = rows.filter((r) => recorded.has(r.held.id) && r.nextAttemptAt);
      await enqueueAttempts(
        this.boss,
        db,
        retries.map((r) => ({ job: { deliveryId: r.held.id, series: r.held.series, attempt: r.attempt + 1 }, startAfter: r.nextAttemptAt! })),
      );
    };
    if (rows.some((r) => r.nextAttemptAt)) await withTransaction(this.pool, write);
    else await write(this.pool);
    for (const r of rows) {
      const details = { deliveryId: r.held.id, attempt: r.attempt, status: r.status, responseStatus: r.response.status, error: r.response.errorMessage };
      if (r.response.ok) this.logger.debug(details, "webhook attempt");
      else this.logger.info(details, "webhook attempt");
    }
  }

  /** The outcomes that are still their delivery's next step, each logged with it; returns their ids. */
  private async recordSteps(db: Queryable, rows: Step[]): Promise<Set<string>> {
    const { rows: stepped } = await db.query<{ id: string }>(
      `WITH ${OUTCOMES}, stepped AS (
         UPDATE webhook_deliveries d
            SET status = o.status, attempts = o.attempt, last_attempt_at = o.started_at, next_attempt_at = o.next_attempt_at,
                delivered_at = o.delivered_at, error_message = o.error_message,
                first_attempted_at = coalesce(d.first_attempted_at, o.finished_at), claimed_by = NULL, claimed_until = NULL
           FROM o
          WHERE d.id = o.id AND d.claimed_by = $12 AND d.series = o.series AND d.attempts = o.attempt - 1
         RETURNING d.id
       ), logged AS (${logAttemptsOf("stepped")})
       SELECT id FROM stepped`,
      this.outcomeValues(rows),
    );
    return new Set(stepped.map((row) => row.id));
  }

  /**
   * An operator started a new series while these attempts were on the wire: each is logged under its own
   * series and its claim released, the record staying as the redelivery set it.
   */
  private async releaseOthers(db: Queryable, rows: Step[]): Promise<void> {
    await db.query(
      `WITH ${OUTCOMES}, released AS (
         UPDATE webhook_deliveries d
            SET claimed_by = NULL, claimed_until = NULL, first_attempted_at = coalesce(d.first_attempted_at, o.finished_at)
           FROM o
          WHERE d.id = o.id AND d.claimed_by = $12
         RETURNING d.id
       )
       ${logAttemptsOf("released")}`,
      this.outcomeValues(rows),
    );
  }

  /** The parameters of OUTCOMES, then this process's claim ($12). */
  private outcomeValues(rows: Step[]): unknown[] {
    return [
      rows.map((r) => r.held.id),
      rows.map((r) => r.held.series),
      rows.map((r) => r.attempt),
      rows.map((r) => r.status),
      rows.map((r) => r.startedAt),
      rows.map((r) => r.finishedAt),
      rows.map((r) => r.nextAttemptAt),
      rows.map((r) => (r.response.ok ? r.finishedAt : null)),
      rows.map((r) => r.response.errorMessage),
      rows.map((r) => r.held.url),
      rows.map((r) => r.response.status),
      this.owner,
    ];
  }

  /** The delivery's attempt is written (or handed back): the next event of its order may go. */
  private release(held: Held): void {
    this.held.delete(held.id);
    const endpoint = held.endpoint;
    endpoint.held--;
    if (endpoint.held === 0 && endpoint.active === 0) this.endpoints.delete(endpoint.key);
    if (held.firstAttempt) {
      const chain = this.orders.get(held.orderId);
      if (chain) {
        const index = chain.indexOf(held);
        if (index >= 0) chain.splice(index, 1);
        if (chain.length === 0) this.orders.delete(held.orderId);
        else if (index === 0 && chain[0]!.state === "waiting") this.enqueue(chain[0]!);
      }
    }
    for (const wake of this.roomWaiters.splice(0)) wake();
    if (this.held.size === 0) for (const wake of this.drainWaiters.splice(0)) wake();
  }

  /** Extends the lease of every delivery this process holds. */
  async renewClaims(): Promise<void> {
    if (this.held.size === 0) return;
    await this.pool.query("UPDATE webhook_deliveries SET claimed_until = clock_timestamp() + make_interval(secs => $2) WHERE claimed_by = $1", [
      this.owner,
      this.leaseSeconds,
    ]);
  }

  closeIntake(): void {
    this.intakeClosed = true;
    for (const wake of this.roomWaiters.splice(0)) wake();
  }

  /**
   * Shutdown: no new attempts start; deliveries held but not on the wire are handed back (claim
   * released, attempt enqueued again) for another worker; those on the wire finish and are recorded.
   */
  async stop(waitMs: number): Promise<void> {
    this.stopping = true;
    const unsent = [...this.held.values()].filter((held) => held.state === "waiting" || held.state === "queued");
    if (unsent.length > 0) {
      await withTransaction(this.pool, async (tx) => {
        const { rows } = await tx.query<{ id: string; series: number; attempts: number; next_attempt_at: Date }>(
          `UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL
            WHERE id = ANY($1::text[]) AND claimed_by = $2 AND status = 'PENDING'
           RETURNING id, series, attempts, next_attempt_at`,
          [unsent.map((held) => held.id), this.owner],
        );
        await enqueueAttempts(
          this.boss,
          tx,
          rows.map((row) => ({ job: { deliveryId: row.id, series: row.series, attempt: row.attempts + 1 }, startAfter: row.next_attempt_at })),
        );
      });
      for (const held of unsent) {
        held.endpoint.queue = held.endpoint.queue.filter((queued) => queued !== held);
        this.release(held);
      }
    }
    if (this.held.size > 0) {
      await Promise.race([
        new Promise<void>((resolve) => this.drainWaiters.push(resolve)),
        new Promise((resolve) => setTimeout(resolve, waitMs).unref()),
      ]);
    }
  }
}

/**
 * Recovery: deliveries whose claim lapsed (the process holding them died, or lost the database for
 * longer than the lease) are released and their next attempt enqueued. Any worker runs it; a claim
 * taken again meanwhile is skipped.
 */
export async function recoverLapsedClaims(pool: Pool, boss: PgBoss): Promise<number> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ id: string; series: number; attempts: number; next_attempt_at: Date }>(
      `UPDATE webhook_deliveries d SET claimed_by = NULL, claimed_until = NULL
        WHERE d.id IN (SELECT id FROM webhook_deliveries
                        WHERE claimed_by IS NOT NULL AND claimed_until < clock_timestamp()
                        ORDER BY claimed_until LIMIT 500
                        FOR UPDATE SKIP LOCKED)
       RETURNING d.id, d.series, d.attempts, d.next_attempt_at`,
    );
    await enqueueAttempts(
      boss,
      tx,
      rows.map((row) => ({ job: { deliveryId: row.id, series: row.series, attempt: row.attempts + 1 }, startAfter: row.next_attempt_at })),
    );
    return rows.length;
  });
}

/**
 * Backstop for "never lost": pending deliveries overdue by more than `olderThanSeconds` and not held by
 * a worker get their next attempt enqueued again (e.g. a job deleted by hand, or one whose pg-boss
 * retries ran out while the database was unreachable). A duplicate job is harmless: the attempt's
 * series/number check makes any job but the delivery's next step do nothing. Each delivery is
 * re-enqueued at most once per period.
 */
export async function sweepStalledDeliveries(pool: Pool, boss: PgBoss, olderThanSeconds: number): Promise<number> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ id: string; series: number; attempts: number }>(
      `UPDATE webhook_deliveries d SET swept_at = clock_timestamp()
        WHERE d.id IN (SELECT id FROM webhook_deliveries
                        WHERE status = 'PENDING' AND claimed_by IS NULL
                          AND greatest(next_attempt_at, swept_at) <= clock_timestamp() - make_interval(secs => $1)
                        ORDER BY next_attempt_at
                        LIMIT 500
                        FOR UPDATE SKIP LOCKED)
       RETURNING d.id, d.series, d.attempts`,
      [olderThanSeconds],
    );
    await enqueueAttempts(boss, tx, rows.map((row) => ({ job: { deliveryId: row.id, series: row.series, attempt: row.attempts + 1 } })));
    return rows.length;
  });
}

/**
 * Starts webhook delivery in this process: the delivery queue and its workers, claim renewal and
 * recovery, and the minute sweep.
 */
export async function startWebhookDelivery(options: WebhookDeliveryOptions): Promise<WebhookDelivery> {
  const { pool, boss, logger, config } = options;
  await ensureDeliveryQueues(boss, config.webhookTimeoutMs);
  const leaseSeconds = options.leaseSeconds ?? 20;
  const dispatcher = new DeliveryDispatcher({ pool, boss, logger, config, maxHeld: options.maxHeld ?? 5000, leaseSeconds });
  const pollingIntervalSeconds = options.pollingIntervalSeconds ?? 0.5;
  await boss.work<DeliveryJob>(
    DELIVERY_QUEUE,
    {
      ...DUE_FIRST,
      batchSize: options.batchSize ?? 100,
      // One fetcher: a batch's attempts run concurrently in the dispatcher once claimed, and pg-boss wakes
      // every fetcher of a queue at each job's NOTIFY, so a second one fetched nothing once a job (two
      // fetches a delivery; figure 5). A NOTIFY that comes while the fetcher claims makes it fetch again at once.
      localConcurrency: 1,
      perJobResults: true,
      // A full batch means more is waiting: fetch again at once instead of waiting for a poll.
      burstWhenBatchFull: true,
      pollingIntervalSeconds,
      // Scheduled retries are not announced when they fall due: the same floor while notified.
      notifyPollingIntervalSeconds: pollingIntervalSeconds,
    },
    (jobs) => dispatcher.take(jobs),
  );

  const every = (ms: number, what: string, task: () => Promise<unknown>) => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      task()
        .catch((error: unknown) => logger.error({ err: error }, what))
        .finally(() => (running = false));
    }, ms);
    timer.unref();
    return timer;
  };
  const renewal = every((leaseSeconds * 1000) / 4, "renewing webhook delivery claims failed", () => dispatcher.renewClaims());
  const recovery = every(Math.min(RECOVERY_INTERVAL_MS, leaseSeconds * 1000), "recovering lapsed webhook delivery claims failed", async () => {
    const recovered = await recoverLapsedClaims(pool, boss);
    if (recovered > 0) logger.warn({ recovered }, "re-enqueued webhook deliveries whose worker stopped holding them");
  });

  // Overdue by well past a crashed attempt's recovery (lease, then a recovery pass).
  const sweepAfterSeconds = deliveryQueueOptions(config.webhookTimeoutMs).expireInSeconds + leaseSeconds + 300;
  await boss.schedule(SWEEP_QUEUE, "* * * * *");
  await boss.work(SWEEP_QUEUE, async () => {
    const requeued = await sweepStalledDeliveries(pool, boss, sweepAfterSeconds);
    if (requeued > 0) logger.warn({ requeued }, "re-enqueued stalled webhook deliveries");
  });
  return {
    async stop() {
      dispatcher.closeIntake();
      await boss.offWork(DELIVERY_QUEUE, { wait: true });
      await dispatcher.stop(config.webhookTimeoutMs + 5000);
      clearInterval(renewal);
      clearInterval(recovery);
      await boss.offWork(SWEEP_QUEUE, { wait: true });
      closeWebhookConnections();
    },
  };
}
