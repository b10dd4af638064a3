// Decisions 17 and 19: a buyer holds at most 3 payment reports under verification per trade, on the
// market route and the partner route alike, and payment verifications are scheduled fairly across
// orders: one order's reports never delay another order's verification. Real chain, indexer and
// PostgreSQL; the CEP portal simulator sits behind a forwarder that answers each lookup in 300 ms, as a
// real portal takes its time, so a queue of made-up reports would show as a delay.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { PAYMENT_VERIFY_QUEUE } from "../../src/jobs/queues.ts";
import { paymentReportMessage, reportAmount } from "../../src/payments/report.ts";
import { startTradeStack, waitForStatus as waitForOrderStatus, type TradeStack } from "../support/trade-stack.ts";
import { activeOrder, approveKyc, fund, lockWithPermit, market, signIn, type Buyer, type Json, type PermitAnswer } from "../market/support.ts";
import { startCepPortalProxy, type CepPortalProxy } from "./support/cep-portal-proxy.ts";
import { lockedOrder, mexicoCityDate, orderDetail, report, sandbox, waitForVerified, type OrderDetail } from "./support/payments.ts";

const PORTAL_LATENCY_MS = 300;
/** Made-up reports sent at once on the flooded trade. */
/** Made-up reports sent at once: under the wallet's 200 requests a minute (surface-limits.ts), so the report cap is what refuses them. */
const FLOOD = 150;

let stack: TradeStack;
let proxy: CepPortalProxy;
let flooder: Buyer;
let flooded: Awaited<ReturnType<typeof activeOrder>>;

before(async () => {
  proxy = await startCepPortalProxy();
  stack = await startTradeStack({ CEP_URL: proxy.url });
  proxy.target = `${stack.service.baseUrl}/simulators/cep`;
  proxy.delayMs = PORTAL_LATENCY_MS;
  // The flooding buyer: a market wallet with BASIC KYC that locks one order through a permit.
  flooder = await signIn(stack);
  await approveKyc(stack, flooder);
  await fund(stack, flooder.account.address, { eth: 1, usdc: 0 });
  flooded = await activeOrder(stack, 20);
  const permit = await market<PermitAnswer & Json>(stack, "POST", `/orders/${flooded.escrowOrderId}/lock-permit`, { token: flooder.token });
  assert.equal(permit.status, 201, JSON.stringify(permit.body));
  await lockWithPermit(stack, flooder.account, permit.body);
  await waitForOrderStatus(stack, flooded.id, "LOCKED");
});
after(async () => {
  await stack?.close();
  await proxy?.close();
});

const madeUpReport = () => ({ trackingKey: `FAKE${randomBytes(10).toString("hex").toUpperCase()}`, operationDate: mexicoCityDate(new Date()), senderBankCode: "40002" });

/** A real payment on another order (another buyer: sandbox wallet 1), paid and reported; the milliseconds from its report to its verification. */
async function verificationTime(): Promise<{ order: OrderDetail; ms: number }> {
  const order = await lockedOrder(stack);
  const paid = await sandbox(stack, order.id, "pay");
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  const verified = await waitForVerified(stack, order.id, 120_000);
  const at = (event: string) => Date.parse(verified.timeline.find((entry) => entry.event === event)!.timestamp);
  return { order: verified, ms: at("PAYMENT_VERIFIED") - at("PAYMENT_REPORTED") };
}

/** Jobs of the verification queue waiting or running for one order. */
async function jobsOf(orderId: string): Promise<number> {
  const { rows } = await stack.service.pool.query<{ n: string }>(
    "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND singleton_key = $2 AND state IN ('created', 'retry', 'active')",
    [PAYMENT_VERIFY_QUEUE, orderId],
  );
  return Number(rows[0]!.n);
}

test("one trade flooded with made-up reports: 3 are taken, the rest 429, and another buyer's payment is verified in its normal time", async () => {
  const baseline = await verificationTime();

  // Spread over several sessions of the flooding wallet: a new session gives no fresh budget, and the
  // cap refuses every report past the third.
  const sessions = [flooder.token, ...(await Promise.all(Array.from({ length: 4 }, async () => (await signIn(stack, flooder.account)).token)))];
  const answers = await Promise.all(
    Array.from({ length: FLOOD }, (_, i) => market(stack, "POST", `/trades/${flooded.escrowOrderId}/payment`, { token: sessions[i % sessions.length]!, body: madeUpReport() })),
  );
  const statuses: Record<number, number> = {};
  for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  assert.equal(statuses[202], 3, `3 reports under verification at most: ${JSON.stringify(statuses)}`);
  const refused = answers.filter((answer) => answer.status === 429);
  assert.equal(refused.length, FLOOD - 3, JSON.stringify(statuses));
  assert.ok(refused.every((answer) => answer.body.error === "RATE_LIMITED" && Number(answer.headers.get("retry-after")) > 0));

  // The partner route counts the same reports: a 4th, signed by the buyer's wallet, is refused too.
  const fields = madeUpReport();
  const message = paymentReportMessage({ escrowOrderId: flooded.escrowOrderId, ...fields, amountMxn: reportAmount(flooded.totalMxn) });
  const signed = await report(stack, flooded.id, { ...fields, signature: await flooder.account.signMessage({ message }) });
  assert.deepEqual([signed.status, signed.body.error], [429, "RATE_LIMITED"], JSON.stringify(signed.body));
  // A repeat of a report being verified is not a new one: it answers as the first did.
  const accepted = answers.find((answer) => answer.status === 202)!.body.paymentReport as Json;
  const repeat = await market(stack, "POST", `/trades/${flooded.escrowOrderId}/payment`, {
    token: flooder.token,
    body: { trackingKey: accepted.trackingKey, operationDate: accepted.operationDate, senderBankCode: accepted.senderBankCode },
  });
  assert.equal(repeat.status, 202, JSON.stringify(repeat.body));

  // Direct pressure on the queue: however many jobs are sent for the flooded order, it holds one place.
  for (let i = 0; i < 200; i++) await stack.service.boss.send(PAYMENT_VERIFY_QUEUE, { orderId: flooded.id }, { singletonKey: flooded.id });
  assert.ok((await jobsOf(flooded.id)) <= 1, "one job at most per order");

  const underFlood = await verificationTime();
  console.log(
    `# fair verification: a real payment verified ${baseline.ms} ms after its report with no flood, ${underFlood.ms} ms while another trade ` +
      `was flooded with ${FLOOD} reports (${statuses[202]} taken, ${refused.length} refused 429) and 200 extra jobs; portal latency ${PORTAL_LATENCY_MS} ms`,
  );
  assert.ok(underFlood.ms < baseline.ms + 10 * PORTAL_LATENCY_MS + 5_000, `verified in ${underFlood.ms} ms under flood (${baseline.ms} ms without)`);
  assert.equal((await orderDetail(stack, flooded.id)).status, "LOCKED", "the flooded trade is still LOCKED");
});

test("the order's reports are verified in turn by its one job: each made-up report ends rejected, and a new report is taken then", async () => {
  const detail = await waitForRejections(3);
  assert.equal(detail.status, "LOCKED");
  const again = await market(stack, "POST", `/trades/${flooded.escrowOrderId}/payment`, { token: flooder.token, body: madeUpReport() });
  assert.equal(again.status, 202, JSON.stringify(again.body));
});

test("a report made while the order's job waits for a retried report's time is tried at once: the real payment is verified within seconds", async () => {
  // The previous test left one made-up report being verified: asked again after 2, 4, 8, 15, 30 s. By now
  // the order's job waits for that report's next attempt, seconds away.
  await new Promise((resolve) => setTimeout(resolve, 16_000));
  const spei = await market<Json>(stack, "POST", `/sandbox/trades/${flooded.escrowOrderId}/spei`, { token: flooder.token, body: {} });
  assert.equal(spei.status, 200, JSON.stringify(spei.body));
  const reported = await market(stack, "POST", `/trades/${flooded.escrowOrderId}/payment`, {
    token: flooder.token,
    body: { trackingKey: spei.body.trackingKey, operationDate: spei.body.operationDate, senderBankCode: spei.body.senderBankCode },
  });
  assert.equal(reported.status, 202, JSON.stringify(reported.body));
  const verified = await waitForVerified(stack, flooded.id, 60_000);
  const reportedAt = Date.parse(verified.timeline.filter((entry) => entry.event === "PAYMENT_REPORTED").at(-1)!.timestamp);
  const ms = Date.parse(verified.timeline.find((entry) => entry.event === "PAYMENT_VERIFIED")!.timestamp) - reportedAt;
  console.log(`# fair verification: a report made while its order's job waited for a retry was verified ${ms} ms after it`);
  assert.ok(ms < 5_000, `verified ${ms} ms after the report`);
});

async function waitForRejections(count: number): Promise<OrderDetail> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const detail = await orderDetail(stack, flooded.id);
    const rejected = detail.timeline.filter((entry) => entry.event === "PAYMENT_REJECTED" && entry.data.reason === "CEP_NOT_FOUND").length;
    if (rejected >= count) return detail;
    assert.ok(Date.now() < deadline, `${rejected} of ${count} reports rejected in 3 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
