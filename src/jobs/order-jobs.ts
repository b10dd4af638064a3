import { TransactionNotYetPossibleError, recordTransactionRequest, type TransactionSender } from "../chain/transaction-sender.ts";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { TimerKind } from "../orders/machine.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";
import { recordEvent } from "../webhooks/outbox.ts";
import { inTransaction, type PgBoss } from "./boss.ts";

export const ORDER_TIMER_QUEUE = "orders.timer";
export const CHAIN_SEND_QUEUE = "chain.send";
export const PAYMENT_VERIFY_QUEUE = "payments.verify";

interface TimerJob {
  orderId: string;
  timer: TimerKind;
  dueAt: string;
}

interface ChainSendJob {
  transactionId: string;
}

export interface PaymentVerificationJob {
  orderId: string;
  cepTrackingKey: string;
  operationDate: string;
  senderBankCode: string;
}

/**
 * The order actors' effects as pg-boss jobs and outbox rows, written through the transition's own
 * transaction. Timers are delayed jobs (never in-memory delays), so a restart loses none.
 */
export function orderEffectPorts(boss: PgBoss): OrderEffectPorts {
  return {
    async notify(tx, event) {
      await recordEvent(tx, event, { boss });
    },
    async startTimer(tx, timer) {
      await boss.send(ORDER_TIMER_QUEUE, timer satisfies TimerJob, { startAfter: new Date(timer.dueAt), ...inTransaction(tx) });
    },
    async sendTransaction(tx, request) {
      const transactionId = await recordTransactionRequest(tx, request);
      if (transactionId) await boss.send(CHAIN_SEND_QUEUE, { transactionId } satisfies ChainSendJob, inTransaction(tx));
    },
    async verifyPayment(tx, request) {
      await boss.send(PAYMENT_VERIFY_QUEUE, request satisfies PaymentVerificationJob, inTransaction(tx));
    },
  };
}

const QUEUE_OPTIONS = {
  [ORDER_TIMER_QUEUE]: { retryLimit: 50, retryDelay: 5, retryBackoff: true, retryDelayMax: 300 },
  // A transaction that would revert now (a deadline the chain has not reached) is retried with backoff.
  [CHAIN_SEND_QUEUE]: { retryLimit: 200, retryDelay: 2, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 90 },
  // One attempt is one portal lookup (seconds): a worker killed mid-attempt is retried within a minute.
  [PAYMENT_VERIFY_QUEUE]: { retryLimit: 1000, retryDelay: 5, retryBackoff: true, retryDelayMax: 300, expireInSeconds: 60 },
};

export async function createOrderQueues(boss: PgBoss): Promise<void> {
  for (const [name, options] of Object.entries(QUEUE_OPTIONS)) {
    await boss.createQueue(name, options);
    // createQueue leaves an existing queue as it was: apply the current settings on every start.
    await boss.updateQueue(name, options);
  }
}

/** Workers: timers fire into the order actor; chain transactions are sent once by the sender. */
export async function startOrderWorkers(deps: { boss: PgBoss; pool: Pool; ports: OrderEffectPorts; sender: TransactionSender | undefined; logger: Logger }): Promise<void> {
  const { boss, pool, ports, logger } = deps;
  // Workers poll every half second (pg-boss's default is 2 s): a step of a trade waits at most that long.
  await boss.work<TimerJob>(ORDER_TIMER_QUEUE, { pollingIntervalSeconds: 0.5, localConcurrency: 2 }, async ([job]) => {
    const { orderId, timer, dueAt } = job!.data;
    const result = await applyOrderEvent(pool, ports, orderId, { type: "TIMER_FIRED", timer, dueAt, at: new Date().toISOString() });
    logger.info({ orderId, timer, changed: result.changed, status: result.status }, "order timer fired");
  });
  const sender = deps.sender;
  if (sender) {
    await boss.work<ChainSendJob>(CHAIN_SEND_QUEUE, { localConcurrency: 2, pollingIntervalSeconds: 0.5 }, async ([job]) => {
      try {
        const outcome = await sender.process(job!.data.transactionId);
        logger.info({ transactionId: job!.data.transactionId, outcome }, "escrow transaction settled");
      } catch (error) {
        if (error instanceof TransactionNotYetPossibleError) logger.info({ transactionId: job!.data.transactionId, reason: error.message }, "escrow transaction deferred");
        throw error;
      }
    });
  }
}
