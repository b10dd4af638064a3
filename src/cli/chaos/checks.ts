// The end-of-run checks of `npm run chaos`: every order against its path, the chain, the indexer, the
// service's transaction records and what the webhook receiver got.
import type pg from "pg";
import type { Address, PublicClient } from "viem";
import { escrowAbi, escrowOrderStatus } from "../../chain/escrow-abi.ts";
import { qualifiedTable } from "../../sync/indexer-tables.ts";
import { STRANGER, type Trade } from "./driver.ts";
import type { Delivery } from "./outside.ts";
import { ESCROW_EVENTS, PATHS, type EscrowEventName } from "./paths.ts";

export interface Violation {
  kind: string;
  trade?: number;
  orderId?: string;
  path?: string;
  detail: string;
}

export interface CheckStats {
  ordersChecked: number;
  chainEvents: Record<EscrowEventName, number>;
  webhookEvents: number;
  deliveriesReceived: number;
  /** Deliveries the receiver got more than once with a 2xx answer (at-least-once after a kill). */
  duplicateDeliveries: number;
  /** Attempts answered 500 by the flaky endpoint, and deliveries that needed a retry. */
  flakyFailures: number;
  retriedDeliveries: number;
  revertedTransactions: number;
  warnings: string[];
}

export interface CheckInput {
  pool: pg.Pool;
  publicClient: PublicClient;
  escrow: Address;
  fromBlock: bigint;
  indexerSchema: string;
  trades: Trade[];
  deliveries: Delivery[];
  webhookRetryDelaysSeconds: number[];
  /** When the service was SIGKILLed (epoch ms). */
  serviceKillTimes: number[];
}

const TERMINAL = new Set(["COMPLETED", "REFUNDED", "EXPIRED"]);

interface ChainLog {
  eventName: EscrowEventName;
  transactionHash: string;
  blockNumber: bigint;
  blockHash: string;
  logIndex: number;
  args: { orderId?: string; reason?: number };
}

export async function checkRun(input: CheckInput): Promise<{ violations: Violation[]; stats: CheckStats }> {
  const { pool, trades } = input;
  const violations: Violation[] = [];
  const warnings: string[] = [];
  const violate = (trade: Trade | undefined, kind: string, detail: string) =>
    violations.push({ kind, detail, ...(trade ? { trade: trade.n, path: trade.expected, ...(trade.orderId ? { orderId: trade.orderId } : {}) } : {}) });

  // Every escrow event on chain, by order.
  const logsByOrder = new Map<string, ChainLog[]>();
  const chainEvents = Object.fromEntries(ESCROW_EVENTS.map((name) => [name, 0])) as Record<EscrowEventName, number>;
  for (const eventName of ESCROW_EVENTS) {
    const logs = (await input.publicClient.getContractEvents({ address: input.escrow, abi: escrowAbi, eventName, fromBlock: input.fromBlock, toBlock: "latest" })) as unknown as ChainLog[];
    chainEvents[eventName] = logs.length;
    for (const log of logs) {
      const key = String(log.args.orderId).toLowerCase();
      logsByOrder.set(key, [...(logsByOrder.get(key) ?? []), { ...log, eventName }]);
    }
  }
  const ids = trades.flatMap((trade) => (trade.orderId ? [trade.orderId] : []));
  const orders = new Map(
    (
      await pool.query<{ id: string; status: string; escrow_order_id: string; release_tx_hash: string | null; refund_tx_hash: string | null; expires_at: Date; lock_expires_at: Date | null }>(
        "SELECT id, status, escrow_order_id, release_tx_hash, refund_tx_hash, expires_at, lock_expires_at FROM orders WHERE id = ANY($1)",
        [ids],
      )
    ).rows.map((row) => [row.id, row]),
  );
  const transactions = (await pool.query<{ order_id: string; action: string; status: string; tx_hash: string | null; error: string | null }>("SELECT order_id, action, status, tx_hash, error FROM chain_transactions WHERE order_id = ANY($1)", [ids])).rows;
  const indexed = (
    await pool.query<{ order_id: string; event_name: string; n: string }>(
      `SELECT lower(order_id) AS order_id, event_name, count(*) AS n FROM ${qualifiedTable(input.indexerSchema, "escrow_event")} WHERE order_id IS NOT NULL GROUP BY 1, 2`,
    )
  ).rows;
  const events = (await pool.query<{ id: string; order_id: string; sequence: number; event_type: string; body: string }>("SELECT id, order_id, sequence, event_type, body FROM webhook_events WHERE order_id = ANY($1) ORDER BY order_id, sequence", [ids])).rows;
  const deliveries = (
    await pool.query<{ id: string; event_id: string; status: string; attempts: number }>("SELECT id, event_id, status, attempts FROM webhook_deliveries WHERE order_id = ANY($1)", [ids])
  ).rows;
  const attempts = (
    await pool.query<{ delivery_id: string; attempt: number; started_at: Date; finished_at: Date; response_status: number | null }>(
      "SELECT a.delivery_id, a.attempt, a.started_at, a.finished_at, a.response_status FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.order_id = ANY($1) ORDER BY a.delivery_id, a.series, a.attempt",
      [ids],
    )
  ).rows;
  const holds = (
    await pool.query<{ order_id: string; event: string; data: { decision?: string }; created_at: Date }>(
      "SELECT order_id, event, data, created_at FROM order_timeline WHERE order_id = ANY($1) AND event IN ('THIRD_PARTY_PAYMENT', 'HOLD_DECIDED') ORDER BY created_at, id",
      [ids],
    )
  ).rows;
  const releasesAsked = (
    await pool.query<{ order_id: string; created_at: Date }>("SELECT order_id, created_at FROM chain_transactions WHERE order_id = ANY($1) AND action = 'confirmPayment'", [ids])
  ).rows;
  const deliveryByEvent = new Map(deliveries.map((delivery) => [delivery.event_id, delivery]));
  const received = new Map<string, Delivery[]>();
  for (const delivery of input.deliveries) received.set(delivery.webhookId, [...(received.get(delivery.webhookId) ?? []), delivery]);
  const attemptsByDelivery = new Map<string, typeof attempts>();
  for (const attempt of attempts) attemptsByDelivery.set(attempt.delivery_id, [...(attemptsByDelivery.get(attempt.delivery_id) ?? []), attempt]);

  for (const delivery of input.deliveries) {
    if (delivery.verdict !== "ok") violate(undefined, "webhook-signature", `delivery ${delivery.webhookId} (${delivery.event} of ${delivery.orderId}) failed the partner check: ${delivery.verdict}`);
  }

  let duplicateDeliveries = 0;
  let flakyFailures = 0;
  let retriedDeliveries = 0;
  let webhookEvents = 0;
  let revertedTransactions = 0;
  const now = Date.now();

  for (const trade of trades) {
    if (trade.failure) violate(trade, "driver", `the driver could not finish the path: ${trade.failure}`);
    if (!trade.orderId) {
      if (!trade.failure) violate(trade, "driver", "no order was created");
      continue;
    }
    const spec = PATHS[trade.expected];
    const order = orders.get(trade.orderId);
    if (!order) {
      violate(trade, "missing-order", "the order is not in the database");
      continue;
    }

    // Terminal state, and no timer lost.
    if (!TERMINAL.has(order.status)) {
      const deadline = order.status === "LOCKED" ? order.lock_expires_at : order.status === "PENDING_DEPOSIT" || order.status === "ACTIVE" ? order.expires_at : null;
      const overdue = deadline ? ` (its ${order.status === "LOCKED" ? "lock" : order.status === "ACTIVE" ? "listing" : "deposit"} deadline passed ${Math.round((now - deadline.getTime()) / 1000)} s ago)` : "";
      violate(trade, deadline && deadline.getTime() < now ? "timer-lost" : "stuck", `the order is stuck in ${order.status}${overdue}`);
    } else if (order.status !== spec.status) {
      violate(trade, "wrong-state", `ended ${order.status}, the path ${trade.expected} ends ${spec.status}`);
    }

    // The escrow on chain.
    const onChain = (await input.publicClient.readContract({ address: input.escrow, abi: escrowAbi, functionName: "getOrder", args: [order.escrow_order_id as `0x${string}`] })) as { status: number };
    const chainStatus = escrowOrderStatus[onChain.status] ?? String(onChain.status);
    if (chainStatus !== spec.chainStatus) violate(trade, "chain-state", `the escrow is ${chainStatus} on chain, the path ${trade.expected} leaves it ${spec.chainStatus} (order ${order.status})`);
    const logs = logsByOrder.get(order.escrow_order_id.toLowerCase()) ?? [];
    for (const name of ESCROW_EVENTS) {
      const count = logs.filter((log) => log.eventName === name).length;
      const want = spec.events[name] ?? 0;
      if (count !== want) violate(trade, count > want ? "duplicate-chain-action" : "missing-chain-action", `${count} ${name} event(s) on chain, expected ${want}`);
      const indexedCount = Number(indexed.find((row) => row.order_id === order.escrow_order_id.toLowerCase() && row.event_name === name)?.n ?? 0);
      if (indexedCount !== count) {
        const where = logs.filter((log) => log.eventName === name).map((log) => `block ${log.blockNumber} ${log.blockHash.slice(0, 10)} log ${log.logIndex} tx ${log.transactionHash.slice(0, 10)}`);
        violate(trade, "indexer", `the indexer holds ${indexedCount} ${name} row(s), the chain ${count}${where.length > 0 ? ` (on chain: ${where.join("; ")})` : ""}`);
      }
    }
    const released = logs.find((log) => log.eventName === "Released");
    const refunded = logs.find((log) => log.eventName === "Refunded");
    if (released && order.release_tx_hash?.toLowerCase() !== released.transactionHash.toLowerCase()) violate(trade, "tx-hash", `releaseTxHash ${order.release_tx_hash} is not the Released transaction ${released.transactionHash}`);
    if (refunded && order.refund_tx_hash?.toLowerCase() !== refunded.transactionHash.toLowerCase()) violate(trade, "tx-hash", `refundTxHash ${order.refund_tx_hash} is not the Refunded transaction ${refunded.transactionHash}`);
    if (refunded && spec.refundReason !== undefined && Number(refunded.args.reason) !== spec.refundReason) violate(trade, "refund-reason", `Refunded with reason ${refunded.args.reason}, expected ${spec.refundReason}`);

    // The service's own transactions: each action mined once, none left unsent.
    const mine = transactions.filter((row) => row.order_id === trade.orderId);
    const minedPerAction = new Map<string, number>();
    for (const row of mine) {
      if (row.status === "MINED") minedPerAction.set(row.action, (minedPerAction.get(row.action) ?? 0) + 1);
      if (row.status === "PENDING" || row.status === "SENT") violate(trade, "transaction-unsettled", `${row.action} is still ${row.status}`);
      if (row.status === "REVERTED") {
        revertedTransactions += 1;
        warnings.push(`trade ${trade.n} (${trade.orderId}): ${row.action} REVERTED (${row.error ?? "no error recorded"})`);
      }
    }
    for (const [action, count] of minedPerAction) if (count > 1) violate(trade, "duplicate-transaction", `${action} MINED ${count} times in chain_transactions`);

    // A third-party payment (decisions 8): held once, released only after the operator's decision, and
    // the payer never named to the partner.
    if (spec.thirdPartyPayment) {
      const entries = holds.filter((row) => row.order_id === trade.orderId);
      const held = entries.filter((row) => row.event === "THIRD_PARTY_PAYMENT");
      const decided = entries.find((row) => row.event === "HOLD_DECIDED");
      if (held.length !== 1) violate(trade, "third-party-hold", `${held.length} THIRD_PARTY_PAYMENT entries, expected 1`);
      if (decided?.data.decision !== "RELEASE") violate(trade, "third-party-hold", `no HOLD_DECIDED RELEASE on the timeline`);
      for (const asked of releasesAsked.filter((row) => row.order_id === trade.orderId)) {
        if (!decided || asked.created_at < decided.created_at) violate(trade, "third-party-hold", "the release was asked for before the operator's decision");
      }
      if (events.some((event) => event.order_id === trade.orderId && (event.body.includes(STRANGER.name) || event.body.includes(STRANGER.rfc)))) {
        violate(trade, "third-party-leak", "a webhook names the third-party payer");
      }
    }

    // Webhooks: the outbox in sequence, each event delivered, signed, first attempted in order.
    const outbox = events.filter((event) => event.order_id === trade.orderId);
    webhookEvents += outbox.length;
    const sequences = outbox.map((event) => event.sequence);
    if (sequences.some((sequence, index) => sequence !== index + 1)) violate(trade, "webhook-sequence", `outbox sequences ${sequences.join(",")} are not 1..${outbox.length}`);
    const types = outbox.map((event) => event.event_type);
    if (types.join(",") !== spec.webhooks.join(",")) violate(trade, "webhook-events", `events ${types.join(", ")}; the path ${trade.expected} has ${spec.webhooks.join(", ")}`);
    let previousFirstArrival = -Infinity;
    for (const event of outbox) {
      const delivery = deliveryByEvent.get(event.id);
      if (!delivery) {
        violate(trade, "webhook-undelivered", `no delivery record for ${event.event_type} (sequence ${event.sequence})`);
        continue;
      }
      const got = received.get(delivery.id) ?? [];
      const accepted = got.filter((entry) => entry.answered === 200);
      if (delivery.status !== "DELIVERED") violate(trade, "webhook-undelivered", `${event.event_type} (sequence ${event.sequence}) is ${delivery.status} after ${delivery.attempts} attempt(s)`);
      if (accepted.length === 0) violate(trade, "webhook-undelivered", `the receiver never accepted ${event.event_type} (sequence ${event.sequence}, delivery ${delivery.id})`);
      if (accepted.length > 1) duplicateDeliveries += accepted.length - 1;
      if (got.some((entry) => entry.rawBody !== event.body)) violate(trade, "webhook-body", `${event.event_type} arrived with a body other than the outbox's`);
      if (got.length > 0) {
        const first = Math.min(...got.map((entry) => entry.at));
        if (first < previousFirstArrival) violate(trade, "webhook-order", `${event.event_type} (sequence ${event.sequence}) was first attempted before sequence ${event.sequence - 1}`);
        previousFirstArrival = Math.max(previousFirstArrival, first);
      }
      // The flaky endpoint: refused attempts are retried on the schedule, and the records show them.
      const refused = got.filter((entry) => entry.answered === 500);
      if (refused.length > 0) {
        flakyFailures += refused.length;
        retriedDeliveries += 1;
        const recorded = (attemptsByDelivery.get(delivery.id) ?? []).filter((attempt) => attempt.response_status === 500);
        if (recorded.length === 0) {
          // An attempt is recorded once it has finished: a kill just after the partner's answer loses that record.
          const last = Math.max(...refused.map((entry) => entry.at));
          const killedRightAfter = input.serviceKillTimes.some((at) => at >= last && at - last < 15_000);
          const what = `delivery ${delivery.id} was refused ${refused.length} time(s) and the attempts record none`;
          if (killedRightAfter) warnings.push(`trade ${trade.n} (${trade.orderId}): ${what} (the service was killed within 15 s of the refusal)`);
          else violate(trade, "webhook-retry-record", what);
        }
        const series = attemptsByDelivery.get(delivery.id) ?? [];
        for (let index = 1; index < series.length; index += 1) {
          const waited = (series[index]!.started_at.getTime() - series[index - 1]!.finished_at.getTime()) / 1000;
          const delay = input.webhookRetryDelaysSeconds[Math.min(series[index - 1]!.attempt - 1, input.webhookRetryDelaysSeconds.length - 1)] ?? 0;
          if (waited < delay - 0.5) violate(trade, "webhook-retry-schedule", `attempt ${series[index]!.attempt} of delivery ${delivery.id} came ${waited.toFixed(1)} s after the previous, the schedule says ${delay} s`);
        }
      }
    }
  }

  return {
    violations,
    stats: {
      ordersChecked: orders.size,
      chainEvents,
      webhookEvents,
      deliveriesReceived: input.deliveries.length,
      duplicateDeliveries,
      flakyFailures,
      retriedDeliveries,
      revertedTransactions,
      warnings,
    },
  };
}

/**
 * Waits until every order is terminal, no delivery is pending, no transaction unsent and the indexer has
 * indexed the chain's last block (after a restart Ponder re-indexes the unfinalized blocks), or `timeoutMs` passes.
 */
export async function settle(
  pool: pg.Pool,
  orderIds: string[],
  timeoutMs: number,
  indexerCaughtUp: () => Promise<boolean>,
  onTick: (left: { orders: number; deliveries: number; transactions: number; indexerCaughtUp: boolean }) => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ orders: string; deliveries: string; transactions: string }>(
      `SELECT (SELECT count(*) FROM orders WHERE id = ANY($1) AND status NOT IN ('COMPLETED', 'REFUNDED', 'EXPIRED')) AS orders,
              (SELECT count(*) FROM webhook_deliveries WHERE order_id = ANY($1) AND status = 'PENDING') AS deliveries,
              (SELECT count(*) FROM chain_transactions WHERE order_id = ANY($1) AND status IN ('PENDING', 'SENT')) AS transactions`,
      [orderIds],
    );
    const left = { orders: Number(rows[0]!.orders), deliveries: Number(rows[0]!.deliveries), transactions: Number(rows[0]!.transactions), indexerCaughtUp: await indexerCaughtUp().catch(() => false) };
    onTick(left);
    if (left.orders === 0 && left.deliveries === 0 && left.transactions === 0 && left.indexerCaughtUp) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
