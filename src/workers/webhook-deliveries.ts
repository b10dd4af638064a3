import { withTransaction, type Pool } from "../db/pool.ts";
import type { PgBoss } from "../jobs/boss.ts";
import type { Logger } from "../logger.ts";
import { postWebhook } from "../webhooks/http-sender.ts";
import { DELIVERY_QUEUE, deliveryQueueOptions, ensureDeliveryQueues, SWEEP_QUEUE, type DeliveryJob } from "../jobs/queues.ts";
import { enqueueAttempt } from "../webhooks/queue.ts";
import { webhookHeaders } from "../webhooks/signature.ts";

/** The configuration the delivery worker reads (decisions section 1 names). */
export interface WebhookDeliveryConfig {
  webhookRetryDelaysSeconds: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
}

export interface WebhookDeliveryOptions {
  pool: Pool;
  boss: PgBoss;
  logger: Logger;
  config: WebhookDeliveryConfig;
  /** Attempts in flight at once in this process (each holds one pooled connection). Default 4. */
  concurrency?: number;
  /** Default 0.5 s, so a first attempt leaves within about half a second of the commit. */
  pollingIntervalSeconds?: number;
}

export interface WebhookDelivery {
  /** Stops taking new attempts (the one in flight finishes). */
  stop(): Promise<void>;
}

interface LockedDelivery {
  id: string;
  partner_id: string;
  order_id: string;
  sequence: number;
  status: string;
  attempts: number;
  max_attempts: number;
  series: number;
  next_attempt_at: Date | null;
  first_attempted_at: Date | null;
  body: string;
}

const LOCK_NOT_AVAILABLE = "55P03";

/** The wait before attempt `failures + 1`, after `failures` failed attempts. */
export function retryDelaySeconds(delays: number[], failures: number): number {
  return delays[failures - 1] ?? delays.at(-1) ?? 0;
}

/**
 * Makes one delivery attempt for a job, if the job is still the delivery's next step.
 *
 * The delivery row stays locked (FOR UPDATE NOWAIT) from the check to the recorded outcome, so two
 * attempts of one delivery never run at once: a second job finds the row busy, fails, and pg-boss
 * retries it later, when it finds itself stale. The outcome, the attempt log and the next attempt's job
 * commit together. If the process dies mid-attempt nothing is recorded, the job expires and pg-boss
 * retries it: the attempt is made again under the same delivery id (at least once, never lost).
 */
export async function attemptDelivery(deps: { pool: Pool; boss: PgBoss; logger: Logger; config: WebhookDeliveryConfig }, job: DeliveryJob): Promise<void> {
  const { pool, boss, logger, config } = deps;
  await withTransaction(pool, async (tx) => {
    let delivery: LockedDelivery | undefined;
    try {
      const { rows } = await tx.query<LockedDelivery>(
        `SELECT d.id, d.partner_id, d.order_id, d.sequence, d.status, d.attempts, d.max_attempts, d.series,
                d.next_attempt_at, d.first_attempted_at, e.body
           FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
          WHERE d.id = $1
          FOR UPDATE OF d NOWAIT`,
        [job.deliveryId],
      );
      delivery = rows[0];
    } catch (error) {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) throw new Error(`delivery ${job.deliveryId} has an attempt in flight`, { cause: error });
      throw error;
    }
    if (!delivery || delivery.status !== "PENDING" || delivery.series !== job.series || delivery.attempts !== job.attempt - 1) return;
    if (delivery.next_attempt_at && delivery.next_attempt_at.getTime() > Date.now() + 1000) {
      await enqueueAttempt(boss, tx, job, delivery.next_attempt_at);
      return;
    }
    if (!delivery.first_attempted_at) {
      // First attempts of one order go out in sequence order: wait until every earlier event's first
      // attempt has finished (committed), then go.
      const { rows: earlier } = await tx.query(
        "SELECT 1 FROM webhook_deliveries WHERE order_id = $1 AND sequence < $2 AND first_attempted_at IS NULL LIMIT 1",
        [delivery.order_id, delivery.sequence],
      );
      if (earlier.length > 0) {
        await enqueueAttempt(boss, tx, job, new Date(Date.now() + 500));
        return;
      }
    }

    const { rows: partners } = await tx.query<{ webhook_url: string | null; webhook_secret: string }>(
      "SELECT webhook_url, webhook_secret FROM partners WHERE id = $1",
      [delivery.partner_id],
    );
    const partner = partners[0]!;
    const startedAt = new Date();
    let outcome: { ok: boolean; status: number | null; errorMessage: string | null };
    if (!partner.webhook_url) {
      outcome = { ok: false, status: null, errorMessage: "The partner has no webhook URL configured" };
    } else {
      // Signed at send time with the partner's current secret: a rotation applies to the next attempt.
      outcome = await postWebhook({
        url: partner.webhook_url,
        body: delivery.body,
        headers: webhookHeaders(delivery.id, partner.webhook_secret, startedAt, delivery.body),
        timeoutMs: config.webhookTimeoutMs,
        allowPrivate: config.webhookAllowPrivate,
      });
    }
    const finishedAt = new Date();
    const attempts = delivery.attempts + 1;
    let status: "DELIVERED" | "FAILED" | "PENDING";
    let nextAttemptAt: Date | null = null;
    if (outcome.ok) status = "DELIVERED";
    else if (attempts >= delivery.max_attempts) status = "FAILED";
    else {
      status = "PENDING";
      nextAttemptAt = new Date(finishedAt.getTime() + retryDelaySeconds(config.webhookRetryDelaysSeconds, attempts) * 1000);
    }
    await tx.query(
      `UPDATE webhook_deliveries
          SET status = $2, attempts = $3, last_attempt_at = $4, next_attempt_at = $5, delivered_at = $6,
              error_message = $7, first_attempted_at = coalesce(first_attempted_at, $8)
        WHERE id = $1`,
      [delivery.id, status, attempts, startedAt, nextAttemptAt, outcome.ok ? finishedAt : null, outcome.errorMessage, finishedAt],
    );
    await tx.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, series, attempt, started_at, finished_at, url, response_status, error_message)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [delivery.id, delivery.series, attempts, startedAt, finishedAt, partner.webhook_url, outcome.status, outcome.errorMessage],
    );
    if (nextAttemptAt) await enqueueAttempt(boss, tx, { deliveryId: delivery.id, series: delivery.series, attempt: attempts + 1 }, nextAttemptAt);
    logger.info(
      { deliveryId: delivery.id, attempt: attempts, status, responseStatus: outcome.status, error: outcome.errorMessage },
      "webhook attempt",
    );
  });
}

/**
 * Backstop for "never lost": pending deliveries overdue by more than `olderThanSeconds` get their next
 * attempt enqueued again (e.g. a job deleted by hand, or one whose pg-boss retries ran out while the
 * database was unreachable). A duplicate job is harmless: the attempt's series/number check makes any
 * job but the delivery's next step do nothing. Each delivery is re-enqueued at most once per period.
 */
export async function sweepStalledDeliveries(pool: Pool, boss: PgBoss, olderThanSeconds: number): Promise<number> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ id: string; series: number; attempts: number }>(
      `SELECT id, series, attempts FROM webhook_deliveries
        WHERE status = 'PENDING'
          AND greatest(next_attempt_at, swept_at) <= clock_timestamp() - make_interval(secs => $1)
        ORDER BY next_attempt_at
        LIMIT 500
        FOR UPDATE SKIP LOCKED`,
      [olderThanSeconds],
    );
    for (const row of rows) {
      await enqueueAttempt(boss, tx, { deliveryId: row.id, series: row.series, attempt: row.attempts + 1 });
      await tx.query("UPDATE webhook_deliveries SET swept_at = clock_timestamp() WHERE id = $1", [row.id]);
    }
    return rows.length;
  });
}

/**
 * Starts webhook delivery in this process: the delivery queue and its workers, and the minute sweep.
 */
export async function startWebhookDelivery(options: WebhookDeliveryOptions): Promise<WebhookDelivery> {
  const { pool, boss, logger, config } = options;
  await ensureDeliveryQueues(boss, config.webhookTimeoutMs);
  const deps = { pool, boss, logger, config };
  await boss.work<DeliveryJob>(
    DELIVERY_QUEUE,
    {
      localConcurrency: options.concurrency ?? 4,
      batchSize: 1,
      pollingIntervalSeconds: options.pollingIntervalSeconds ?? 0.5,
      // Scheduled retries are not announced when they fall due: the same floor while notified.
      notifyPollingIntervalSeconds: options.pollingIntervalSeconds ?? 0.5,
    },
    async ([job]) => {
      if (job) await attemptDelivery(deps, job.data);
    },
  );
  // Overdue by well past a crashed attempt's pg-boss recovery (job expiry, then a supervise pass).
  const sweepAfterSeconds = deliveryQueueOptions(config.webhookTimeoutMs).expireInSeconds + 300;
  await boss.schedule(SWEEP_QUEUE, "* * * * *");
  await boss.work(SWEEP_QUEUE, async () => {
    const requeued = await sweepStalledDeliveries(pool, boss, sweepAfterSeconds);
    if (requeued > 0) logger.warn({ requeued }, "re-enqueued stalled webhook deliveries");
  });
  return {
    async stop() {
      await boss.offWork(DELIVERY_QUEUE, { wait: true });
      await boss.offWork(SWEEP_QUEUE, { wait: true });
    },
  };
}
