import type { Hex } from "viem";
import type { EscrowStatus } from "../chain/escrow-gateway.ts";
import { TransactionNotYetMinedError, TransactionNotYetPossibleError, recordTransactionRequest, type TransactionSender } from "../chain/transaction-sender.ts";
import type { Pool, Queryable } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";
import { orderEventsStatement } from "../webhooks/outbox.ts";
import { inTransaction, type PgBoss } from "../jobs/boss.ts";
import { gatheredJobWrites, jobWritesAtOnce, type JobWrites } from "../jobs/job-writes.ts";
import { recordPermanentFailure, retryingOnlyWhatCanSucceed, settlingEachJob } from "../jobs/retry.ts";
import { CHAIN_CONFIRM_QUEUE, CHAIN_SEND_QUEUE, DUE_FIRST, ONE_JOB_AT_A_TIME, ORDER_TIMER_QUEUE, PAYMENT_VERIFY_QUEUE, timerJobId, type ChainSendJob, type PaymentVerificationJob, type TimerJob } from "../jobs/queues.ts";

/**
 * The order actors' effects as pg-boss jobs and outbox rows, written through the transition's own
 * transaction. Timers are delayed jobs (never in-memory delays), so a restart loses none.
 */
export function orderEffectPorts(boss: PgBoss): OrderEffectPorts {
  return effectPorts(boss, (tx) => jobWritesAtOnce(boss, tx));
}

function effectPorts(boss: PgBoss, jobWritesIn: (tx: Queryable) => JobWrites): OrderEffectPorts {
  return {
    recordEvents(events, options) {
      return orderEventsStatement(events, options, jobWritesIn);
    },
    async startTimer(tx, timer) {
      await jobWritesIn(tx).insert(ORDER_TIMER_QUEUE, [{ id: timerJobId(timer), data: timer satisfies TimerJob, startAfter: new Date(timer.dueAt) }]);
    },
    async cancelTimer(tx, timer) {
      await jobWritesIn(tx).delete(ORDER_TIMER_QUEUE, [timerJobId(timer)]);
    },
    async sendTransaction(tx, request) {
      const transactionId = await recordTransactionRequest(tx, request);
      if (transactionId) await jobWritesIn(tx).insert(CHAIN_SEND_QUEUE, [{ data: { transactionId } satisfies ChainSendJob }]);
    },
    async verifyPayment(tx, request) {
      // One job per order at a time (the queue is `exclusive` by order id): when the order already has
      // one, nothing is added, and that job takes the new report up in turn (decisions 19). A job still
      // waiting for a retried report's time is made due now, so the new report is not kept waiting.
      // Written at once whatever the mode: whether it was added decides the update.
      const db = inTransaction(tx);
      const sent = await boss.send(PAYMENT_VERIFY_QUEUE, { orderId: request.orderId } satisfies PaymentVerificationJob, { singletonKey: request.orderId, ...db });
      if (!sent) await boss.update(PAYMENT_VERIFY_QUEUE, undefined, { singletonKey: request.orderId, startAfter: new Date(), ...db });
    },
    gatheringJobs(tx) {
      const gathered = gatheredJobWrites(boss, tx);
      return { ports: effectPorts(boss, (other) => (other === tx ? gathered : jobWritesIn(other))), flush: gathered.flush };
    },
  };
}

/** What the lock timers read from the escrow: its effective lock expiry (moved by pauses) and whether it is paused. */
export interface EscrowLockClock {
  /** Unix seconds, or null when the escrow order is not Locked. */
  lockExpiryOf(escrowOrderId: Hex): Promise<bigint | null>;
  paused(): Promise<boolean>;
}

/** While the escrow is paused, a due lock timer looks again this often (no lock is refunded while paused). */
export const PAUSED_RECHECK_SECONDS = 2;

/**
 * Pausing the escrow stops lock time (decisions 19): before a due lock or grace timer fires into the
 * order, the escrow's effective expiry is read. Paused: the timer looks again shortly. Moved later: the
 * order's expiry and timer follow it (LOCK_EXPIRY_MOVED). Returns true when the timer must not fire now.
 */
async function followLockClock(deps: { boss: PgBoss; pool: Pool; ports: OrderEffectPorts; logger: Logger; escrow: EscrowLockClock }, job: TimerJob): Promise<boolean> {
  const { rows } = await deps.pool.query<{ escrow_order_id: Hex; status: string; lock_expires_at: Date | null }>(
    "SELECT escrow_order_id, status, lock_expires_at FROM orders WHERE id = $1",
    [job.orderId],
  );
  const row = rows[0];
  if (!row || row.status !== "LOCKED" || !row.lock_expires_at) return false;
  const expiry = await deps.escrow.lockExpiryOf(row.escrow_order_id);
  if (expiry === null) return false; // not Locked on chain: the machine decides and the sender skips
  if (await deps.escrow.paused()) {
    await deps.boss.send(ORDER_TIMER_QUEUE, job, { startAfter: new Date(Date.now() + PAUSED_RECHECK_SECONDS * 1000) });
    deps.logger.info({ orderId: job.orderId, timer: job.timer }, "escrow paused: lock time stopped, timer deferred");
    return true;
  }
  const chainExpiry = new Date(Number(expiry) * 1000);
  if (chainExpiry.getTime() <= row.lock_expires_at.getTime()) return false;
  const result = await applyOrderEvent(deps.pool, deps.ports, job.orderId, {
    type: "LOCK_EXPIRY_MOVED",
    dueAt: row.lock_expires_at.toISOString(),
    lockExpiresAt: chainExpiry.toISOString(),
    at: new Date().toISOString(),
  });
  deps.logger.info({ orderId: job.orderId, lockExpiresAt: chainExpiry.toISOString(), changed: result.changed }, "lock expiry moved by an escrow pause");
  return true;
}

/** A due deposit timer whose order may still get its deposit looks again this often. */
export const DEPOSIT_RECHECK_SECONDS = 3;

/**
 * Before a due deposit timer expires an order, the chain must have closed the deposit window
 * (`depositOutcome`, escrow-gateway.ts): a deposit the escrow accepted before the deadline lists its
 * order however long its confirmations, the indexer or a lagging RPC endpoint take (decisions 6). While
 * the window may still hold a deposit, or the escrow holds one whose Deposited event is not applied yet
 * (the indexer delivers it, or else the reconciliation reads it from the chain: sync/escrow-reconciliation.ts),
 * or the chain cannot be read, the timer looks again in DEPOSIT_RECHECK_SECONDS: it fires only into an
 * order whose escrow is empty at a block past the deadline. Returns true when the timer must not fire now.
 */
async function awaitDepositWindow(deps: { boss: PgBoss; pool: Pool; logger: Logger; depositOutcome: DepositOutcome }, job: TimerJob): Promise<boolean> {
  const { rows } = await deps.pool.query<{ status: string; escrow_order_id: Hex; deposit_deadline: Date }>(
    "SELECT status, escrow_order_id, deposit_deadline FROM orders WHERE id = $1",
    [job.orderId],
  );
  const row = rows[0];
  if (row?.status !== "PENDING_DEPOSIT") return false;
  const deadline = BigInt(Math.floor(row.deposit_deadline.getTime() / 1000));
  const outcome = await deps.depositOutcome(row.escrow_order_id, deadline).catch((error: unknown) => {
    deps.logger.warn({ orderId: job.orderId, err: error }, "deposit timer: the chain could not be read; looking again shortly");
    return "unreadable" as const;
  });
  if (outcome === "None") return false;
  await deps.boss.send(ORDER_TIMER_QUEUE, job, { startAfter: new Date(Date.now() + DEPOSIT_RECHECK_SECONDS * 1000) });
  if (outcome !== "unreadable") {
    const why = outcome === undefined ? "the chain has not closed the deposit window yet (deadline or confirmations)" : `the escrow holds the deposit (${outcome}); waiting for its indexed Deposited event`;
    deps.logger.info({ orderId: job.orderId, timer: job.timer }, `deposit timer due, but ${why}`);
  }
  return true;
}

/** The escrow's status once the chain has closed an order's deposit window, or undefined before (escrow-gateway.ts). */
export type DepositOutcome = (escrowOrderId: Hex, depositDeadline: bigint) => Promise<EscrowStatus | undefined>;

/**
 * Workers: timers fire into the order actor; chain transactions are sent once by the sender.
 * `depositOutcome` guards the deposit timer (awaitDepositWindow): EXPIRED is final, and an order expired
 * while its deposit was on its way would leave the seller's USDC in the escrow with no listing.
 */
export async function startOrderWorkers(deps: {
  boss: PgBoss;
  pool: Pool;
  ports: OrderEffectPorts;
  sender: TransactionSender | undefined;
  logger: Logger;
  /** The escrow's lock clock; without it lock timers fire at the order's own expiry. */
  escrow?: EscrowLockClock;
  depositOutcome?: DepositOutcome;
}): Promise<void> {
  const { boss, pool, ports, logger, depositOutcome } = deps;
  await boss.work<TimerJob>(ORDER_TIMER_QUEUE, { ...ONE_JOB_AT_A_TIME, localConcurrency: 2 }, retryingOnlyWhatCanSucceed<TimerJob>(async (job) => {
    const { orderId, timer, dueAt } = job.data;
    const escrow = deps.escrow;
    if (escrow && (timer === "LOCK_TIMEOUT" || timer === "REFUND_GRACE_TIMEOUT") && (await followLockClock({ boss, pool, ports, logger, escrow }, job.data))) return;
    if (timer === "DEPOSIT_TIMEOUT" && depositOutcome && (await awaitDepositWindow({ boss, pool, logger, depositOutcome }, job.data))) return;
    const result = await applyOrderEvent(pool, ports, orderId, { type: "TIMER_FIRED", timer, dueAt, at: new Date().toISOString() });
    logger.info({ orderId, timer, changed: result.changed, status: result.status }, "order timer fired");
  }, recordPermanentFailure(logger, ORDER_TIMER_QUEUE)));
  const sender = deps.sender;
  if (sender) {
    // Many requests at once: each worker fetches a batch and sends its transactions concurrently (the
    // sender orders nonces and broadcasts), each job settled on its own.
    const settleEach = (handle: (job: ChainSendJob) => Promise<void>, queue: string) =>
      settlingEachJob<ChainSendJob>((job) => handle(job.data), recordPermanentFailure(logger, queue), (job, error) => {
        if (error instanceof TransactionNotYetPossibleError) logger.info({ transactionId: job.data.transactionId, reason: error.message }, "escrow transaction deferred");
        else if (!(error instanceof TransactionNotYetMinedError)) logger.warn({ transactionId: job.data.transactionId, err: error }, "escrow transaction step failed; retried");
      });
    // A full batch is followed by the next fetch at once rather than after the polling interval.
    const workOptions = { ...DUE_FIRST, batchSize: 25, localConcurrency: 2, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5, perJobResults: true } as const;
    await boss.work<ChainSendJob>(
      CHAIN_SEND_QUEUE,
      workOptions,
      settleEach(async ({ transactionId }) => {
        const outcome = await sender.process(transactionId);
        // Broadcast, not mined yet: the confirmation job follows it (written before this job completes,
        // so a crash in between retries this job, which finds the transaction stored and sent). Written on
        // the service's pool, where the insert is planned once a session; pg-boss's own pool planned it at
        // every call (0.3 ms of PostgreSQL a trade, docs/benchmarks.md stop 71).
        if (outcome === "SENT") await boss.send(CHAIN_CONFIRM_QUEUE, { transactionId } satisfies ChainSendJob, { startAfter: 1, ...inTransaction(pool) });
        else logger.info({ transactionId, outcome }, "escrow transaction settled");
      }, CHAIN_SEND_QUEUE),
    );
    await boss.work<ChainSendJob>(
      CHAIN_CONFIRM_QUEUE,
      workOptions,
      settleEach(async ({ transactionId }) => {
        const outcome = await sender.process(transactionId);
        if (outcome === "SENT") throw new TransactionNotYetMinedError(`transaction ${transactionId} not mined yet`);
        logger.info({ transactionId, outcome }, "escrow transaction settled");
      }, CHAIN_CONFIRM_QUEUE),
    );
  }
}
