// Drives one trade along its path through the partner API, the sandbox routes and the admin API, as a
// partner's client would, while the service is being killed under it. A request that finds the service
// down (connection refused or cut, 5xx) is retried: POSTs carry an Idempotency-Key where the API takes
// one, and a sandbox action is first checked on chain, so a transaction mined just before a kill is
// never sent twice by the driver. The order's progress is read from the database (which outlives the
// service), never from in-memory state of the service.
import { createPublicClient, http as viemHttp, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type pg from "pg";
import { escrowAbi, escrowOrderStatus } from "../../chain/escrow-abi.ts";
import { sandboxAccounts } from "../../stack/local-node.ts";
import { parseClabe, withCheckDigit } from "../../domain/clabe.ts";
import { mexicoCityDateTime } from "../../integrations/cep-receipt.ts";
import { paymentReportMessage, reportAmount } from "../../payments/report.ts";
import type { Outside } from "./outside.ts";
import { overtakenPath, PATHS, type PathName } from "./paths.ts";
import { sleep } from "./stack.ts";

/** A valid CLABE at BBVA (prefix 012) for every seller. */
export const SELLER_CLABE = withCheckDigit("01218000118359719");
/** Simulated payments come from STP (participant 90646), from this account. */
/** How long a refused step's effect may take to show on chain: a pending transaction's next blocks (1-2 s each). */
const REFUSAL_SETTLE_MS = 10_000;

/** Whether `check` holds within `ms`, looked at every half second. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; ; await sleep(500)) {
    if (await check().catch(() => false)) return true;
    if (Date.now() > deadline) return false;
  }
}

const SENDER_BANK = "90646";
const SENDER_ACCOUNT = withCheckDigit("64618015700000000");
/** The payer of the third-party-payment path: not any buyer. */
export const STRANGER = { name: "TERCERO AJENO CHAOS", rfc: "TACX800101AB1" };
/** Sandbox wallets 0..4 act as sellers and buyers (5 is on the sandbox sanctions list). */
export const USABLE_WALLETS = 5;

export interface Partner {
  label: string;
  id: string;
  apiKey: string;
  webhookSecret: string;
  flaky: boolean;
}

export interface Trade {
  n: number;
  path: PathName;
  /** The path checked at the end: `path`, or the timer's path when a step came too late (deviation). */
  expected: PathName;
  partner: Partner;
  ref: string;
  amountUsdc: number;
  seller: number;
  buyer: number;
  disputeBy: "BUYER" | "SELLER";
  orderId?: string;
  escrowOrderId?: Hex;
  startedAt: number;
  finishedAt?: number;
  /** Steps done, with when (ms since the run started). */
  steps: { step: string; at: number; note?: string }[];
  /** Why the path changed (a step too late for its window). */
  deviation?: string;
  /** The driver could not finish the path (a step refused or timed out). */
  failure?: string;
}

export interface Incident {
  at: number;
  trade: number;
  step: string;
  status: number | "network";
  detail: string;
}

export interface DriverContext {
  serviceUrl: string;
  adminToken: string;
  pool: pg.Pool;
  outside: Outside;
  escrow: Address;
  publicClient: PublicClient;
  runStart: number;
  incidents: Incident[];
  locks: WalletLocks;
  poller: StatusPoller;
  timing: { depositTimeoutSeconds: number; listingTimeoutSeconds: number; lockWindowSeconds: number };
  /** `--serialize-wallets`: one wallet's sandbox actions never overlap (by default they do, as concurrent clients' do). */
  serializeWallets: boolean;
}

export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: viemHttp(rpcUrl, { timeout: 20_000 }) }) as PublicClient;
}

/** One sandbox wallet's actions at a time. */
export class WalletLocks {
  private readonly tails = new Map<number, Promise<void>>();
  async with<T>(wallet: number, enabled: boolean, work: () => Promise<T>): Promise<T> {
    if (!enabled) return work();
    const previous = this.tails.get(wallet) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.tails.set(wallet, previous.then(() => mine));
    await previous;
    try {
      return await work();
    } finally {
      release();
    }
  }
}

export interface OrderState {
  status: string;
  dispute_outcome: string | null;
  locked_at: Date | null;
  lock_expires_at: Date | null;
  expires_at: Date;
  deposit_deadline: Date;
}

/** Reads the watched orders' rows from the database in one query every interval. */
export class StatusPoller {
  private readonly watched = new Map<string, { predicate: (row: OrderState) => boolean; resolve: (row: OrderState) => void }[]>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly pool: pg.Pool;
  private readonly intervalMs: number;
  constructor(pool: pg.Pool, intervalMs = 400) {
    this.pool = pool;
    this.intervalMs = intervalMs;
  }
  start(): void {
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
  }
  stop(): void {
    clearInterval(this.timer);
  }
  private async tick(): Promise<void> {
    if (this.busy || this.watched.size === 0) return;
    this.busy = true;
    try {
      const { rows } = await this.pool.query<OrderState & { id: string }>(
        "SELECT id, status, dispute_outcome, locked_at, lock_expires_at, expires_at, deposit_deadline FROM orders WHERE id = ANY($1)",
        [[...this.watched.keys()]],
      );
      for (const row of rows) {
        const waiters = this.watched.get(row.id) ?? [];
        const left = waiters.filter((waiter) => {
          if (!waiter.predicate(row)) return true;
          waiter.resolve(row);
          return false;
        });
        if (left.length === 0) this.watched.delete(row.id);
        else this.watched.set(row.id, left);
      }
    } catch {
      // the next tick tries again
    } finally {
      this.busy = false;
    }
  }
  /** The order's row once `predicate` holds, or undefined after `timeoutMs`. */
  wait(orderId: string, predicate: (row: OrderState) => boolean, timeoutMs: number): Promise<OrderState | undefined> {
    return new Promise((resolve) => {
      const entry = {
        predicate,
        resolve: (row: OrderState | undefined) => {
          clearTimeout(timer);
          resolve(row);
        },
      };
      const timer = setTimeout(() => {
        const list = (this.watched.get(orderId) ?? []).filter((waiter) => waiter !== entry);
        if (list.length === 0) this.watched.delete(orderId);
        else this.watched.set(orderId, list);
        resolve(undefined);
      }, timeoutMs);
      this.watched.set(orderId, [...(this.watched.get(orderId) ?? []), entry]);
    });
  }
}

interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

class StepFailed extends Error {}
class StepTooLate extends Error {}

const TERMINAL = new Set(["COMPLETED", "REFUNDED", "EXPIRED"]);

export async function driveTrade(ctx: DriverContext, trade: Trade): Promise<void> {
  const t = () => Date.now() - ctx.runStart;
  const mark = (step: string, note?: string) => trade.steps.push({ step, at: t(), ...(note ? { note } : {}) });
  // Beyond a path's own window, how long a wait may take: restarts take up to a minute or two on a loaded machine.
  const slack = 240_000;
  const { depositTimeoutSeconds, listingTimeoutSeconds, lockWindowSeconds } = ctx.timing;

  async function call<T = Record<string, unknown>>(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Answer<T>> {
    const response = await fetch(`${ctx.serviceUrl}${url}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // not JSON
    }
    return { status: response.status, body: parsed as T };
  }
  /** The harness's reads of the database, through PostgreSQL's outages (`--faults postgres`): retried for a minute. */
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> => {
    for (const deadline = Date.now() + 60_000; ; await sleep(500)) {
      try {
        return await ctx.pool.query<R>(text, values);
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
    }
  };
  const partnerHeaders = (idempotencyKey?: string) => ({ "X-API-Key": trade.partner.apiKey, ...(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {}) });

  /**
   * Repeats `attempt` until it answers `ok`, through outages (network errors, 5xx). `done` (checked
   * before every attempt but the first, and after a refusal) says the action already took effect.
   */
  async function step<T>(
    name: string,
    attempt: () => Promise<Answer<T>>,
    options: { ok: (answer: Answer<T>) => boolean; done?: () => Promise<boolean>; timeoutMs?: number; tooLate?: () => boolean | Promise<boolean> },
  ): Promise<Answer<T> | undefined> {
    const deadline = Date.now() + (options.timeoutMs ?? 180_000);
    let serverErrors = 0;
    for (let tries = 0; ; tries += 1) {
      if (tries > 0 && options.done && (await options.done().catch(() => false))) {
        mark(name, "took effect before the answer was lost");
        return undefined;
      }
      if (Date.now() > deadline) throw new StepFailed(`${name}: no success within ${options.timeoutMs ?? 180_000} ms`);
      let answer: Answer<T>;
      try {
        answer = await attempt();
      } catch (error) {
        ctx.incidents.push({ at: t(), trade: trade.n, step: name, status: "network", detail: (error as Error).cause ? String((error as Error & { cause: unknown }).cause) : (error as Error).message });
        await sleep(300 + Math.min(tries, 8) * 200);
        continue;
      }
      if (options.ok(answer)) {
        mark(name);
        return answer;
      }
      if (answer.status >= 500) {
        serverErrors += 1;
        ctx.incidents.push({ at: t(), trade: trade.n, step: name, status: answer.status, detail: JSON.stringify(answer.body).slice(0, 300) });
        if (await options.tooLate?.()) throw new StepTooLate(`${name}: ${answer.status} after its window closed${chainAhead ? ` ${chainAhead}` : ""}`);
        if (serverErrors >= 8) throw new StepFailed(`${name}: ${serverErrors} answers 5xx, last ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
        await sleep(500 + serverErrors * 500);
        continue;
      }
      // Refused because an earlier attempt, whose answer was lost, is still on its way: a wallet transaction
      // pending in the mempool makes the estimate of the same call revert. Its block decides (a few s).
      if (options.done && (await eventually(options.done, REFUSAL_SETTLE_MS))) {
        mark(name, `answered ${answer.status} but had taken effect`);
        return undefined;
      }
      if (await options.tooLate?.()) throw new StepTooLate(`${name}: ${answer.status} after its window closed${chainAhead ? ` ${chainAhead}` : ""}`);
      throw new StepFailed(`${name}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
    }
  }

  /** Set when a window closed on the chain's clock but not yet on the wall clock (known issue 12: block timestamps ahead). */
  let chainAhead = "";
  /** True once `deadlineMs` (minus 2 s) has passed on the wall clock, or on the chain's clock. */
  const closed = async (deadlineMs: number): Promise<boolean> => {
    if (Date.now() > deadlineMs - 2_000) return true;
    const block = await ctx.publicClient.getBlock().catch(() => undefined);
    if (block && Number(block.timestamp) * 1000 >= deadlineMs) {
      chainAhead = `on the chain's clock, ${Math.round(Number(block.timestamp) - Date.now() / 1000)} s ahead of the wall clock (known issue: local block timestamps)`;
      return true;
    }
    return false;
  };
  const chainStatus = async (): Promise<string> => {
    const order = (await ctx.publicClient.readContract({ address: ctx.escrow, abi: escrowAbi, functionName: "getOrder", args: [trade.escrowOrderId!] })) as { status: number };
    return escrowOrderStatus[order.status] ?? String(order.status);
  };
  const waitStatus = async (what: string, predicate: (row: OrderState) => boolean, timeoutMs: number): Promise<OrderState> => {
    const row = await ctx.poller.wait(trade.orderId!, predicate, timeoutMs);
    if (!row) throw new StepFailed(`waiting for ${what}: not within ${Math.round(timeoutMs / 1000)} s`);
    mark(what);
    return row;
  };
  const is = (...statuses: string[]) => (row: OrderState) => statuses.includes(row.status);
  const hasTimeline = async (event: string) => (await query("SELECT 1 FROM order_timeline WHERE order_id = $1 AND event = $2", [trade.orderId, event])).rowCount! > 0;
  const waitTimeline = async (event: string, timeoutMs: number): Promise<void> => {
    for (const deadline = Date.now() + timeoutMs; !(await hasTimeline(event).catch(() => false)); await sleep(400)) {
      if (Date.now() > deadline) throw new StepFailed(`waiting for ${event}: not within ${Math.round(timeoutMs / 1000)} s`);
    }
    mark(event);
  };

  const sandboxAction = (name: string, wallet: number, url: string, body: unknown, doneWhen: string[], tooLate?: () => boolean | Promise<boolean>) =>
    ctx.locks.with(wallet, ctx.serializeWallets, () =>
      step(name, () => call("POST", `/api/v1/sandbox/orders/${trade.orderId}/${url}`, partnerHeaders(), body), {
        ok: (answer) => answer.status === 200,
        done: async () => doneWhen.includes(await chainStatus()),
        ...(tooLate ? { tooLate } : {}),
      }),
    );

  /**
   * Pays from the buyer's own account (the identity its KYC verified, decisions 8), or with `thirdParty`
   * from a stranger's, which the service holds for an operator.
   */
  async function pay(thirdParty = false): Promise<void> {
    const { rows } = await query<{
      seller_clabe: string;
      total_mxn: string;
      locked_at: Date;
      lock_expires_at: Date;
      escrow_order_id: string;
      payment_concept: string;
      verified_name: string | null;
      verified_rfc: string | null;
    }>(
      `SELECT o.seller_clabe, o.total_mxn, o.locked_at, o.lock_expires_at, o.escrow_order_id, o.payment_concept, b.verified_name, b.verified_rfc
         FROM orders o LEFT JOIN buyers b ON b.wallet = lower(o.buyer_wallet) WHERE o.id = $1`,
      [trade.orderId],
    );
    const row = rows[0]!;
    const payer = thirdParty ? STRANGER : { name: row.verified_name ?? "COMPRADOR CHAOS", rfc: row.verified_rfc ?? "ND" };
    // Now, or the lock's instant if later: the local chain's clock may run ahead of the wall clock.
    const paidAt = new Date(Math.max(Date.now(), row.locked_at.getTime()));
    const beneficiary = parseClabe(row.seller_clabe);
    const amountMxn = reportAmount(row.total_mxn);
    const { trackingKey } = ctx.outside.cep.recordPayment({
      operationAt: paidAt,
      amountMxn,
      beneficiaryAccount: beneficiary.clabe,
      receiverBankCode: beneficiary.participant.code,
      senderBankCode: SENDER_BANK,
      senderAccount: SENDER_ACCOUNT,
      senderName: payer.name,
      senderRfc: payer.rfc,
      beneficiaryName: "VENDEDOR CHAOS",
      // The order's payment concept, as a buyer writes it in the transfer: the CEP check requires it.
      concept: row.payment_concept,
    });
    const operationDate = mexicoCityDateTime(paidAt).date;
    const message = paymentReportMessage({ escrowOrderId: row.escrow_order_id, trackingKey, operationDate, senderBankCode: SENDER_BANK, amountMxn });
    const signature = await privateKeyToAccount(sandboxAccounts[trade.buyer]!.privateKey).signMessage({ message });
    const body = { trackingKey, operationDate, senderBankCode: SENDER_BANK, amountMxn: Number(amountMxn), signature };
    await step("pay", () => call("POST", `/api/v1/orders/${trade.orderId}/payment`, partnerHeaders(`pay-${trade.orderId}-${trackingKey}`), body), {
      ok: (answer) => answer.status === 202,
      tooLate: () => closed(row.lock_expires_at.getTime()),
    });
  }

  /**
   * Pays and waits for the end. REFUNDED instead of COMPLETED is the lock-expiry path when the payment
   * was reported less than 10 s before the lock's end (verification takes a moment); earlier, it is
   * left to the checks as a wrong terminal state.
   */
  async function payAndSettle(): Promise<void> {
    await pay();
    const reportedAt = Date.now();
    const end = await waitStatus("COMPLETED", is("COMPLETED", "REFUNDED"), ctx.timing.lockWindowSeconds * 1000 + slack);
    if (end.status === "REFUNDED" && end.lock_expires_at && reportedAt + 10_000 > end.lock_expires_at.getTime()) {
      throw new StepTooLate(`pay: reported ${Math.round((end.lock_expires_at.getTime() - reportedAt) / 1000)} s before the lock's end, which came first`);
    }
  }

  let current: "deposit" | "lock" | "pay" | "dispute" | undefined;
  try {
    // Set-up through the partner API.
    await step("user", () => call("POST", "/api/v1/users", partnerHeaders(`user-${trade.ref}`), { partnerUserRef: trade.ref, kycAttestation: { level: "FULL", verifiedAt: new Date(Date.now() - 86_400_000).toISOString() } }), {
      ok: (answer) => answer.status === 201 || answer.status === 409,
    });
    const quote = await step<{ id: string }>("quote", () => call("POST", "/api/v1/quotes", partnerHeaders(`quote-${trade.ref}`), { type: "SELL", amountUsdc: trade.amountUsdc, partnerUserRef: trade.ref }), {
      ok: (answer) => answer.status === 201,
    });
    const order = await step<{ id: string; escrowOrderId: Hex }>(
      "order",
      () => call("POST", "/api/v1/orders", partnerHeaders(`order-${trade.ref}`), { quoteId: quote!.body.id, partnerUserRef: trade.ref, sellerClabe: SELLER_CLABE }),
      { ok: (answer) => answer.status === 201 },
    );
    trade.orderId = order!.body.id;
    trade.escrowOrderId = order!.body.escrowOrderId;
    const spec = PATHS[trade.path];

    if (trade.path === "deposit_expiry") {
      await waitStatus("EXPIRED", is("EXPIRED"), depositTimeoutSeconds * 1000 + slack);
      return;
    }
    if (trade.path === "cancel_pending") {
      await step("cancel", () => call("POST", `/api/v1/orders/${trade.orderId}/cancel`, partnerHeaders(`cancel-${trade.ref}`)), {
        ok: (answer) => answer.status === 200,
        done: async () => (await query("SELECT 1 FROM orders WHERE id = $1 AND status = 'EXPIRED'", [trade.orderId])).rowCount === 1,
      });
      await waitStatus("EXPIRED", is("EXPIRED"), slack);
      return;
    }

    current = "deposit";
    const { rows: deadlineRows } = await query<{ deposit_deadline: Date }>("SELECT deposit_deadline FROM orders WHERE id = $1", [trade.orderId]);
    const depositDeadline = deadlineRows[0]!.deposit_deadline.getTime();
    await sandboxAction("deposit", trade.seller, "deposit", { sellerWallet: trade.seller }, ["Active", "Locked", "Disputed", "Released", "Refunded"], () => closed(depositDeadline));
    let row = await waitStatus("ACTIVE", (r) => r.status !== "PENDING_DEPOSIT", depositTimeoutSeconds * 1000 + slack);
    if (row.status === "EXPIRED") throw new StepTooLate("deposit: the order expired before the deposit was seen");

    if (trade.path === "listing_expiry") {
      await waitStatus("EXPIRED", is("EXPIRED"), listingTimeoutSeconds * 1000 + slack);
      return;
    }
    if (trade.path === "cancel_active") {
      await step("cancel", () => call("POST", `/api/v1/orders/${trade.orderId}/cancel`, partnerHeaders(`cancel-${trade.ref}`)), {
        ok: (answer) => answer.status === 200,
        done: async () => (await chainStatus()) === "Refunded",
      });
      // The cancel's refund and the listing timer's race on chain; the first mined decides. Near the
      // listing's end (a block interval, confirmations, a stuck or dropped transaction) the timer's may win.
      const ended = await waitStatus("REFUNDED or EXPIRED", is("REFUNDED", "EXPIRED"), slack);
      if (ended.status === "EXPIRED") {
        trade.expected = overtakenPath(trade.path, "lock");
        trade.deviation = `cancel: accepted, but the listing's expiry refund (the listing ended ${ended.expires_at.toISOString()}) was mined before the cancel's`;
      }
      return;
    }

    current = "lock";
    const listingEnds = row.expires_at.getTime();
    await sandboxAction("lock", trade.buyer, "lock", { buyerWallet: trade.buyer }, ["Locked", "Disputed", "Released", "Refunded"], () => closed(listingEnds));
    row = await waitStatus("LOCKED", (r) => r.status !== "ACTIVE", listingTimeoutSeconds * 1000 + slack);
    if (row.status !== "LOCKED") throw new StepTooLate(`lock: the order went ${row.status} before the lock was seen`);
    const lockWait = lockWindowSeconds * 1000 + slack;

    if (trade.path === "completed") {
      current = "pay";
      await payAndSettle();
      return;
    }
    if (trade.path === "lock_expiry") {
      await waitStatus("REFUNDED", is("REFUNDED"), lockWait);
      return;
    }
    if (trade.path === "third_party_payment") {
      current = "pay";
      await pay(true);
      current = undefined;
      await waitTimeline("THIRD_PARTY_PAYMENT", lockWait);
      // The operator's review: the account turned out to be the buyer's.
      await step(
        "review RELEASE",
        () => call("POST", `/admin/v1/orders/${trade.orderId}/review`, { Authorization: `Bearer ${ctx.adminToken}` }, { decision: "RELEASE", note: `chaos trade ${trade.n}` }),
        { ok: (answer) => answer.status === 200, done: () => hasTimeline("HOLD_DECIDED") },
      );
      await waitStatus("COMPLETED", is("COMPLETED"), slack);
      return;
    }

    // Disputes.
    current = "dispute";
    const lockEnds = row.lock_expires_at!.getTime();
    const party = trade.disputeBy === "BUYER" ? trade.buyer : trade.seller;
    await sandboxAction("dispute", party, "dispute", { by: trade.disputeBy }, ["Disputed", "Released", "Refunded"], () => closed(lockEnds));
    row = await waitStatus("DISPUTED", (r) => r.status !== "LOCKED", lockWait);
    if (row.status !== "DISPUTED") throw new StepTooLate(`dispute: the order went ${row.status} before the dispute was seen`);
    current = undefined;
    await step(
      `resolve ${spec.resolution}`,
      () => call("POST", `/admin/v1/orders/${trade.orderId}/resolve`, { Authorization: `Bearer ${ctx.adminToken}` }, { outcome: spec.resolution, note: `chaos trade ${trade.n}` }),
      {
        ok: (answer) => answer.status === 200,
        done: async () =>
          (await query("SELECT 1 FROM order_timeline WHERE order_id = $1 AND event IN ('DISPUTE_RESOLUTION_REQUESTED', 'DISPUTE_RESOLVED')", [trade.orderId])).rowCount! > 0,
      },
    );
    if (spec.resolution !== "NO_FAULT_RETRY") {
      await waitStatus(spec.status, is(spec.status), slack);
      return;
    }
    row = await waitStatus("LOCKED again", (r) => r.status !== "DISPUTED", slack);
    if (row.status !== "LOCKED") throw new StepFailed(`after NO_FAULT_RETRY the order is ${row.status}`);
    if (trade.path === "dispute_retry_complete") {
      current = "pay";
      await payAndSettle();
    } else {
      await waitStatus("REFUNDED", is("REFUNDED"), lockWait);
    }
  } catch (error) {
    if (error instanceof StepTooLate && current) {
      trade.expected = overtakenPath(trade.path, current);
      trade.deviation = error.message;
      // The timer's path runs on its own: wait for its end so the checks see it.
      const timeout = Math.max(depositTimeoutSeconds, listingTimeoutSeconds, lockWindowSeconds) * 1000 + slack;
      if (trade.orderId) await ctx.poller.wait(trade.orderId, (r) => TERMINAL.has(r.status), timeout);
    } else {
      trade.failure = (error as Error).message;
    }
  } finally {
    trade.finishedAt = t();
  }
}
