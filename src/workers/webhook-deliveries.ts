import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { listenTo } from "../db/listener.ts";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { closeWebhookConnections, postWebhook, type WebhookResponse } from "../webhooks/http-sender.ts";
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
  /** Where the listener for due deliveries connects (a session of its own). */
  databaseUrl: string;
  logger: Logger;
  config: WebhookDeliveryConfig;
  /** Deliveries claimed per statement. Default 100. */
  batchSize?: number;
  /** Deliveries this process holds at once (sending or waiting for their endpoint or order). Default 5000. */
  maxHeld?: number;
  /** Default 0.5 s: how often due deliveries are looked for unannounced (retries falling due, a listener down). */
  pollingIntervalSeconds?: number;
  /** How long a claim lasts unless renewed: a crashed process's deliveries are retried this long after. Default 20 s. */
  leaseSeconds?: number;
}

export interface WebhookDelivery {
  /** Stops claiming, hands back the deliveries not yet sent, lets those on the wire finish. */
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
  /** Attempts averageMs has measured (none: it is a guess). */
  measured: number;
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
/** How long a claimed delivery its endpoint cannot take yet is put off: at least, and at most. */
const MIN_PUT_OFF_MS = 250;
const MAX_PUT_OFF_MS = 30_000;
/** A claimed first attempt whose order's earlier event is not claimed yet is due again after this. */
const ORDER_WAIT_MS = 500;
const RECOVERY_INTERVAL_MS = 5000;
/** Notified at commit by a delivery written due (migration 1764700000100's trigger). */
const DELIVERY_DUE_CHANNEL = "webhook_delivery_due";

/**
 * Sends webhook attempts for this process. The delivery rows are the queue: one statement claims due
 * deliveries (claimed_by/claimed_until on the row, no lock held across the HTTP call), woken by the
 * notification a delivery written due sends at commit and, for retries falling due, by a poll. The
 * attempts run concurrently: at most `webhookConcurrencyPerEndpoint` on the wire per partner endpoint,
 * each over a kept-alive connection, and an order's first attempts one after another in `sequence` order.
 * Outcomes are written in group commits: the record (with its next attempt's time) and the attempt log
 * together, the claim released. A claim is renewed while held; a process that dies stops renewing, and
 * any worker's recovery pass releases those deliveries once the lease has passed, for the next claim
 * (at least once, never lost).
 */
class DeliveryDispatcher {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")}`;
  private readonly held = new Map<string, Held>();
  private readonly endpoints = new Map<string, Endpoint>();
  /** Held first attempts per order, in sequence order: only the first of each may go. */
  private readonly orders = new Map<string, Held[]>();
  private outcomes: Outcome[] = [];
  private flushing: Promise<void> | null = null;
  private drainWaiters: (() => void)[] = [];
  /** A claim pass is running; `claimAgain`: something woke the dispatcher meanwhile. */
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  /** The last pass stopped at maxHeld: the next release looks again. */
  private stoppedFull = false;
  private stopping = false;
  private readonly cap: number;
  private readonly pool: Pool;
  private readonly logger: Logger;
  private readonly config: WebhookDeliveryConfig;
  private readonly maxHeld: number;
  private readonly batchSize: number;
  private readonly leaseSeconds: number;

  constructor(deps: { pool: Pool; logger: Logger; config: WebhookDeliveryConfig; maxHeld: number; batchSize: number; leaseSeconds: number }) {
    ({ pool: this.pool, logger: this.logger, config: this.config, maxHeld: this.maxHeld, batchSize: this.batchSize, leaseSeconds: this.leaseSeconds } = deps);
    this.cap = deps.config.webhookConcurrencyPerEndpoint;
  }

  /** Looks for due deliveries now: one pass at a time, and a wake during a pass runs one more after it. */
  wake(): void {
    if (this.stopping) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claimAgain = false;
    this.claiming = this.claimDue()
      .catch((error: unknown) => this.logger.error({ err: error }, "claiming webhook deliveries failed; the next poll tries again"))
      .finally(() => {
        this.claiming = null;
        if (this.claimAgain) this.wake();
      });
  }

  /** Claims batches while they come back full, up to what the process may hold. */
  private async claimDue(): Promise<void> {
    for (;;) {
      const room = Math.min(this.batchSize, this.maxHeld - this.held.size);
      this.stoppedFull = room <= 0;
      if (room <= 0 || this.stopping) return;
      const claimed = await this.claim(room);
      if (claimed < room) return;
    }
  }

  /**
   * One claim: the due deliveries oldest first, but not first attempts whose order's earlier event another
   * process holds. Committed on its own: a process that dies after it holds its claims until their lease
   * passes, as one that dies while sending does. Claimed deliveries that must wait (an earlier event of
   * their order not claimed with them, their endpoint's share full) are released at once, due later, so
   * the due end of the table never fills with what cannot go yet. Returns how many rows it claimed.
   */
  private async claim(limit: number): Promise<number> {
    const { rows } = await this.pool.query<ClaimedRow>(
      `WITH due AS (
           SELECT d.id FROM webhook_deliveries d
            WHERE d.status = 'PENDING' AND d.claimed_by IS NULL AND d.next_attempt_at <= clock_timestamp()
              AND (d.first_attempted_at IS NOT NULL OR NOT EXISTS (
                     SELECT 1 FROM webhook_deliveries w
                      WHERE w.order_id = d.order_id AND w.sequence < d.sequence AND w.first_attempted_at IS NULL AND w.claimed_by <> $1))
            ORDER BY d.next_attempt_at
            LIMIT $3
            FOR UPDATE OF d SKIP LOCKED
         )
         UPDATE webhook_deliveries d
            SET claimed_by = $1, claimed_until = clock_timestamp() + make_interval(secs => $2)
           FROM due, webhook_events e, partners p
          WHERE d.id = due.id AND e.id = d.event_id AND p.id = d.partner_id
         RETURNING d.id, d.partner_id, d.order_id, d.sequence, d.series, d.attempts, d.max_attempts,
                   d.first_attempted_at IS NULL AS first_attempt, e.body, p.webhook_url, p.webhook_secret,
                   d.first_attempted_at IS NULL AND EXISTS (
                     SELECT 1 FROM webhook_deliveries w
                      WHERE w.order_id = d.order_id AND w.sequence < d.sequence AND w.first_attempted_at IS NULL
                        AND w.claimed_by IS DISTINCT FROM $1 AND w.id NOT IN (SELECT id FROM due)) AS blocked`,
      [this.owner, this.leaseSeconds, limit],
    );

    // First attempts wait for every earlier event of the order: claimed by this statement or held already
    // by this process, they wait in memory (the statement sees the rows it claims as they were, hence
    // `due`); one whose earlier event is not yet claimed (blocked) waits in the table.
    const deferred: { id: string; delayMs: number }[] = [];
    const deferredOrders = new Set<string>();
    const deferredFor = new Map<Endpoint, number>();
    for (const row of [...rows].sort((a, b) => a.sequence - b.sequence)) {
      let delayMs: number | undefined;
      // Known endpoints only: one is made for a delivery admitted, and dropped when it holds none.
      const endpoint = this.endpoints.get(row.partner_id);
      if (row.blocked || (row.first_attempt && deferredOrders.has(row.order_id))) delayMs = ORDER_WAIT_MS;
      else if (endpoint && endpoint.held >= this.holdLimit(endpoint)) {
        // About when the endpoint's pace reaches it, once a round of attempts (its cap) has measured the pace:
        // a backlog then comes due again spread out, not at once. Before that, soon: the first attempts on
        // new connections are the slowest, and a pace taken from them put a fast endpoint's burst off by
        // seconds (figure 8).
        const ahead = endpoint.held + (deferredFor.get(endpoint) ?? 0);
        deferredFor.set(endpoint, (deferredFor.get(endpoint) ?? 0) + 1);
        const paced = endpoint.measured >= this.cap;
        delayMs = paced ? Math.min(MAX_PUT_OFF_MS, Math.max(MIN_PUT_OFF_MS, (ahead / this.cap) * endpoint.averageMs)) : MIN_PUT_OFF_MS;
      }
      if (delayMs === undefined) this.admit(row);
      else {
        deferred.push({ id: row.id, delayMs });
        if (row.first_attempt) deferredOrders.add(row.order_id);
      }
    }
    if (deferred.length > 0) {
      await this.defer(deferred);
      // Looked for again when the first of them falls due, not only at the next poll.
      setTimeout(() => this.wake(), Math.min(...deferred.map((d) => d.delayMs))).unref();
    }
    return rows.length;
  }

  /** Claimed deliveries that must wait: released, due again after their delay (their record shows it). */
  private async defer(deferred: { id: string; delayMs: number }[]): Promise<void> {
    await this.pool.query(
      `UPDATE webhook_deliveries d SET claimed_by = NULL, claimed_until = NULL, next_attempt_at = clock_timestamp() + make_interval(secs => w.delay_ms / 1000.0)
         FROM unnest($1::text[], $2::int[]) AS w (id, delay_ms)
        WHERE d.id = w.id AND d.claimed_by = $3`,
      [deferred.map((d) => d.id), deferred.map((d) => Math.round(d.delayMs)), this.owner],
    );
  }

  private endpoint(key: string): Endpoint {
    let endpoint = this.endpoints.get(key);
    if (!endpoint) {
      endpoint = { key, active: 0, queue: [], held: 0, averageMs: INITIAL_AVERAGE_MS, measured: 0 };
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
    const tookMs = Math.max(1, finishedAt.getTime() - startedAt.getTime());
    endpoint.averageMs = endpoint.measured > 0 ? 0.8 * endpoint.averageMs + 0.2 * tookMs : tookMs;
    endpoint.measured++;
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
   * meanwhile) the record takes the outcome, a retry's time included, where the next claim finds it.
   * Each statement writes a delivery's record with its attempt's log line.
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
    const recorded = await this.recordSteps(rows);
    const others = rows.filter((r) => !recorded.has(r.held.id));
    if (others.length > 0) await this.releaseOthers(others);
    for (const r of rows) {
      const details = { deliveryId: r.held.id, attempt: r.attempt, status: r.status, responseStatus: r.response.status, error: r.response.errorMessage };
      if (r.response.ok) this.logger.debug(details, "webhook attempt");
      else this.logger.info(details, "webhook attempt");
    }
  }

  /** The outcomes that are still their delivery's next step, each logged with it; returns their ids. */
  private async recordSteps(rows: Step[]): Promise<Set<string>> {
    const { rows: stepped } = await this.pool.query<{ id: string }>(
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
  private async releaseOthers(rows: Step[]): Promise<void> {
    await this.pool.query(
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
    if (this.stoppedFull) this.wake();
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

  /**
   * Shutdown: no more claims and no new attempts; deliveries held but not on the wire are handed back
   * (claim released, due as they were) for another worker; those on the wire finish and are recorded.
   */
  async stop(waitMs: number): Promise<void> {
    this.stopping = true;
    await this.claiming;
    const unsent = [...this.held.values()].filter((held) => held.state === "waiting" || held.state === "queued");
    if (unsent.length > 0) {
      await this.pool.query("UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL WHERE id = ANY($1::text[]) AND claimed_by = $2", [
        unsent.map((held) => held.id),
        this.owner,
      ]);
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
 * longer than the lease) are released, due as they were, for the next claim. Any worker runs it; a claim
 * taken again meanwhile is skipped.
 */
export async function recoverLapsedClaims(pool: Pool): Promise<number> {
  const { rowCount } = await pool.query(
    `UPDATE webhook_deliveries d SET claimed_by = NULL, claimed_until = NULL
      WHERE d.id IN (SELECT id FROM webhook_deliveries
                      WHERE claimed_by IS NOT NULL AND claimed_until < clock_timestamp()
                      ORDER BY claimed_until LIMIT 500
                      FOR UPDATE SKIP LOCKED)`,
  );
  return rowCount ?? 0;
}

/**
 * Starts webhook delivery in this process: the claims (woken by the due-delivery notification and a
 * poll), claim renewal and recovery.
 */
export async function startWebhookDelivery(options: WebhookDeliveryOptions): Promise<WebhookDelivery> {
  const { pool, logger, config } = options;
  const leaseSeconds = options.leaseSeconds ?? 20;
  const dispatcher = new DeliveryDispatcher({ pool, logger, config, maxHeld: options.maxHeld ?? 5000, batchSize: options.batchSize ?? 100, leaseSeconds });
  const listener = listenTo({
    databaseUrl: options.databaseUrl,
    channel: DELIVERY_DUE_CHANNEL,
    applicationName: "offramp-webhook-deliveries",
    onNotification: () => dispatcher.wake(),
    // Deliveries written while no session listened were not announced.
    onListening: () => dispatcher.wake(),
    logger,
  });
  await listener.ready;

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
  // Retries falling due are announced by nobody: the poll finds them.
  const poll = setInterval(() => dispatcher.wake(), (options.pollingIntervalSeconds ?? 0.5) * 1000);
  poll.unref();
  const renewal = every((leaseSeconds * 1000) / 4, "renewing webhook delivery claims failed", () => dispatcher.renewClaims());
  const recovery = every(Math.min(RECOVERY_INTERVAL_MS, leaseSeconds * 1000), "recovering lapsed webhook delivery claims failed", async () => {
    const recovered = await recoverLapsedClaims(pool);
    if (recovered > 0) {
      logger.warn({ recovered }, "released webhook deliveries whose worker stopped holding them");
      dispatcher.wake();
    }
  });
  return {
    async stop() {
      clearInterval(poll);
      await listener.stop();
      await dispatcher.stop(config.webhookTimeoutMs + 5000);
      clearInterval(renewal);
      clearInterval(recovery);
      closeWebhookConnections();
    },
  };
}
