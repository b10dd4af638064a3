// Figure 5: full trades per second end to end (POST /quotes + POST /orders -> deposit on chain ->
// ACTIVE -> lock on chain -> LOCKED -> sandbox pay (simulated SPEI + signed report) -> CEP verified ->
// release sent by the service -> COMPLETED), from P concurrent pipelines. Reference: raw escrow
// deposits per second on the same Hardhat node, from the same number of wallets, nothing else.
import { randomBytes } from "node:crypto";
import type { Hex } from "viem";
import { createEscrowGateway, lockPermitDeadline } from "../../src/chain/escrow-gateway.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";
import { assertMined, benchTerms, depositCall, fastWallet, fundedSeller, GAS, lockCall, rpcClient, termsFromApi, type ApiDeposit, type FastWallet } from "../lib/chain.ts";
import { closedLoop } from "../lib/load.ts";
import { median, nowMs, round } from "../lib/stats.ts";
import { ensureUser, quoteAndOrder, waitForStatus, type BenchStack } from "../lib/stack.ts";
import { ratio, type FigureContext, type FigureOutcome, type FigureSpec } from "./context.ts";

const STEP_TIMEOUT_MS = 60_000;
const AMOUNT_USDC = 20;

async function run({ stack, quick, log }: FigureContext): Promise<FigureOutcome> {
  const pipelines = quick ? 2 : Math.min(5, sandboxAccounts.length);
  const maxTrades = quick ? 4 : 150;
  const durationMs = quick ? 30_000 : 90_000;
  const rawDeposits = quick ? 100 : 800;
  const { chainSettings } = stack.chain;
  const rpc = rpcClient(chainSettings.rpcUrl);
  const partner = await stack.createPartner({ name: "Trade bench", limits: { requestsPerMinute: 100000 } });
  const sellers: FastWallet[] = [];
  const buyers: FastWallet[] = [];
  for (let i = 0; i < pipelines; i += 1) {
    await ensureUser(stack, partner, `trader-${i}`);
    sellers.push(await fundedSeller(rpc, chainSettings.chainId, chainSettings.usdcAddress, chainSettings.escrowAddress, 10_000_000n * 10n ** 6n));
    // The buyer is a sandbox wallet, so POST /sandbox/orders/:id/pay can sign its payment report.
    buyers.push(await fastWallet(rpc, chainSettings.chainId, sandboxAccounts[i]!.privateKey));
  }

  // Does this build have the sandbox pay route? (Without it, trades are measured up to LOCKED.)
  const payAvailable = await payRouteExists(stack, partner.apiKey);
  const finalStatus = payAvailable ? "COMPLETED" : "LOCKED";
  log(`sandbox pay route ${payAvailable ? "present" : "absent"}: trades end at ${finalStatus}`);

  const permitSigner = createEscrowGateway(chainSettings);
  const stages: Record<string, number[]> = { order: [], deposit: [], toActive: [], lock: [], toLocked: [], pay: [], toCompleted: [] };
  const trades = await closedLoop({ concurrency: pipelines, durationMs, maxUnits: maxTrades }, async (worker) => {
    const mark = (stage: string, since: number) => {
      const now = nowMs();
      stages[stage]!.push(now - since);
      return now;
    };
    let t = nowMs();
    const order = await quoteAndOrder(stack, partner, `trader-${worker}`, AMOUNT_USDC);
    t = mark("order", t);
    const { terms, signature } = termsFromApi(order.deposit as ApiDeposit);
    const deposit = await sellers[worker]!.send(chainSettings.escrowAddress, depositCall(terms, signature), GAS.deposit);
    await assertMined(rpc, deposit);
    t = mark("deposit", t);
    await waitForStatus(stack.pool, order.id, "ACTIVE", STEP_TIMEOUT_MS);
    t = mark("toActive", t);
    // The buyer's permit, signed by the service key as the market API would (outside the timing's
    // meaning: a signature is a fraction of a millisecond).
    const permit = { orderId: terms.orderId, buyer: buyers[worker]!.address, deadline: lockPermitDeadline() };
    const lock = await buyers[worker]!.send(chainSettings.escrowAddress, lockCall(permit, await permitSigner.signLockPermit(permit)), GAS.lock);
    await assertMined(rpc, lock);
    t = mark("lock", t);
    await waitForStatus(stack.pool, order.id, "LOCKED", STEP_TIMEOUT_MS);
    t = mark("toLocked", t);
    if (!payAvailable) return;
    const pay = await stack.api(partner.apiKey, "POST", `/sandbox/orders/${order.id}/pay`, {});
    if (pay.status !== 200) throw new Error(`pay ${pay.status} ${JSON.stringify(pay.body)}`);
    t = mark("pay", t);
    await waitForStatus(stack.pool, order.id, "COMPLETED", STEP_TIMEOUT_MS);
    mark("toCompleted", t);
  });
  log(`${trades.units} trades to ${finalStatus} in ${trades.elapsedSeconds} s: ${trades.unitsPerSecond} trades/s, p50 ${trades.latencyMs.p50} ms (failures ${trades.failures})`);

  // Reference: deposits alone, from as many wallets as pipelines, each sending its next when the node answered.
  const gateway = createEscrowGateway(chainSettings);
  const signed: { wallet: number; data: Hex }[] = [];
  for (let i = 0; i < rawDeposits; i += 1) {
    const terms = benchTerms(chainSettings.usdcAddress, 1_000_000n);
    signed.push({ wallet: i % pipelines, data: depositCall(terms, await gateway.signTerms(terms)) });
  }
  const hashes: Hex[] = [];
  const rawStart = nowMs();
  const rawDeadline = rawStart + (quick ? 15_000 : 60_000);
  await Promise.all(
    sellers.map(async (seller, w) => {
      for (const item of signed) {
        if (item.wallet !== w || nowMs() > rawDeadline) continue;
        hashes.push(await seller.send(chainSettings.escrowAddress, item.data, GAS.deposit));
      }
    }),
  );
  const rawSeconds = (nowMs() - rawStart) / 1000;
  let reverted = 0;
  for (const hash of hashes) await assertMined(rpc, hash).catch(() => (reverted += 1));
  const rawPerSecond = round(hashes.length / rawSeconds, 1);
  log(`raw deposits: ${hashes.length} in ${round(rawSeconds, 2)} s = ${rawPerSecond} tx/s (${reverted} not successful)`);

  const stageMedians = Object.fromEntries(Object.entries(stages).filter(([, values]) => values.length > 0).map(([stage, values]) => [`${stage}P50Ms`, round(median(values), 0)]));
  const notes = [
    `${pipelines} concurrent pipelines, each running one trade at a time: POST /quotes + POST /orders (${AMOUNT_USDC} USDC), the deposit sent by the pipeline's own seller wallet (funded with test USDC, unlimited allowance given once) with the API's signed terms, wait for ACTIVE, the lock sent by the pipeline's buyer (sandbox wallet ${pipelines > 1 ? `0-${pipelines - 1}` : "0"}), wait for LOCKED, POST /sandbox/orders/:id/pay, wait for COMPLETED (the service verifies the CEP with the portal simulator, sends confirmPayment, and the indexer reports Released). Status is read from the database every 20 ms.`,
    "Each stage's median is in the figure's detail (ms). The payment verification (payments.verify) and transaction sending (chain.send) queues each have 2 pg-boss workers at pg-boss's default 2 s polling interval, and a pg-boss worker waits its interval after every fetch (batch 1), so each queue takes at most about one job a second per service instance: every trade needs one job of each, which caps trades at about 1 per second whatever the chain and the API could do. Most of a trade's time is these queue waits, not work.",
    `Reference: ${hashes.length} escrow deposits (each its own block under automine) sent by ${pipelines} wallets, each sending its next as soon as the node answered the previous one; terms signed beforehand, outside the timing.`,
  ];
  if (!payAvailable) notes.push("The sandbox pay route is not in this build: trades are measured up to LOCKED (deposit and lock), without payment and release.");
  if (trades.failures > 0) notes.push(`${trades.failures} trades failed: ${trades.firstErrors.join(" | ")}`);
  return {
    id: 5,
    key: "trades",
    title: "Full trades per second end to end",
    status: payAvailable && trades.failures === 0 ? "measured" : "partial",
    figure: { label: `trades to ${finalStatus}`, value: trades.unitsPerSecond, unit: "trades/s", detail: { trades: trades.units, seconds: trades.elapsedSeconds, p50Ms: trades.latencyMs.p50, p95Ms: trades.latencyMs.p95, failures: trades.failures, ...stageMedians } },
    reference: { label: "raw escrow deposits on the Hardhat node", value: rawPerSecond, unit: "tx/s", detail: { transactions: hashes.length, seconds: round(rawSeconds, 2), wallets: pipelines, unsuccessful: reverted } },
    extra: [],
    comparison: ratio(trades.unitsPerSecond, rawPerSecond, "raw deposits"),
    params: { pipelines, amountUsdc: AMOUNT_USDC, maxTrades, durationMs },
    notes,
  };
}

async function payRouteExists(stack: BenchStack, apiKey: string): Promise<boolean> {
  const response = await stack.api<{ error?: string; message?: string }>(apiKey, "POST", `/sandbox/orders/ord_${randomBytes(12).toString("hex")}/pay`, {});
  // An unknown route and an unknown order both answer 404 NOT_FOUND; only the route's says "No route".
  return response.status !== 404 || !/^No route/.test(response.body.message ?? "");
}

export const tradesFigure: FigureSpec = { id: 5, key: "trades", title: "Full trades per second end to end", run };
