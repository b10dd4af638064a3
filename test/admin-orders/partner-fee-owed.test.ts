// Decisions 5: a partner without a fee wallet may still charge a PARTNER fee. Quotes and orders are never
// refused for it; the order's signed terms name the service treasury as the fee recipient, so the escrow
// credits the treasury the whole fee at release, and the partner's part (fee - the service's share) is
// recorded as owed: `owedToPartnerUsdc` in the admin revenue report and the partner's revenue, in exact
// token units. On the real chain (pull payments: fee shares are escrow credits).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { parseEventLogs, type Address, type Hex } from "viem";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { mexicoMonth } from "../../src/domain/periods.ts";
import { escrowCredit } from "../disputes/support.ts";
import { placeOrder, startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

const TREASURY = devAccounts[DEV_ACCOUNT.treasury].address;
// 77.77 USDC at 1.33 %: fee = floor(77770000 x 133 / 10000) = 1034341; GROWTH's 20 % share =
// floor(1034341 x 2000 / 10000) = 206868 (206868.2 rounded down); owed to the partner 827473.
const AMOUNT_USDC = 77.77;
const FEE_PERCENT = 1.33;
const FEE_RAW = 1_034_341n;
const SHARE_RAW = 206_868n;
const OWED_RAW = FEE_RAW - SHARE_RAW;

interface Revenue {
  partnerId: string;
  feeOrders: number;
  partnerFees: { usdcRaw: string };
  serviceShare: { usdcRaw: string };
  partnerNet: { usdcRaw: string };
  owedToPartnerUsdc: number;
  owedToPartnerUsdcRaw: string;
}

let stack: TradeStack;
let walletless: { id: string; apiKey: string; webhookSecret: string };
let withWallet: { id: string; apiKey: string; webhookSecret: string };
let order: Awaited<ReturnType<typeof placeOrder>>;
let treasuryCreditBefore: bigint;

before(async () => {
  stack = await startTradeStack();
  walletless = await stack.service.createPartner({ name: "No fee wallet", tier: "GROWTH" });
  withWallet = await stack.service.createPartner({ name: "Has fee wallet", tier: "GROWTH", feeWallet: `0x${"ab".repeat(20)}` });
});
after(() => stack?.close());

const as = (partner: typeof walletless) => ({ service: stack.service, partner });

test("a quote and an order with a PARTNER fee are accepted for a partner without a fee wallet; the terms name the treasury", async () => {
  order = await placeOrder(as(walletless), { amountUsdc: AMOUNT_USDC, feePercent: FEE_PERCENT, feeRecipient: "PARTNER" });
  assert.equal(order.status, "PENDING_DEPOSIT");
  const terms = (order.deposit as { terms: { feeRecipient: string; feeBps: number; treasuryShareBps: number } }).terms;
  assert.equal(terms.feeRecipient.toLowerCase(), TREASURY.toLowerCase());
  assert.equal(terms.feeBps, 133);
  assert.equal(terms.treasuryShareBps, 2000);
});

test("at release the escrow credits the treasury the whole fee", async () => {
  const key = walletless.apiKey;
  const step = async (action: string) => {
    const response = await stack.service.api("POST", `/sandbox/orders/${order.id}/${action}`, { key, body: {} });
    assert.equal(response.status, 200, JSON.stringify(response.body));
  };
  treasuryCreditBefore = await escrowCredit(stack, TREASURY);
  await step("deposit");
  await waitForStatus(as(walletless), order.id, "ACTIVE");
  await step("lock");
  await waitForStatus(as(walletless), order.id, "LOCKED");
  await step("pay");
  const completed = await waitForStatus(as(walletless), order.id, "COMPLETED", 40_000);
  assert.equal((await escrowCredit(stack, TREASURY)) - treasuryCreditBefore, FEE_RAW);

  const client = stack.service.chain!.gateway.publicClient;
  const receipt = await client.getTransactionReceipt({ hash: completed.releaseTxHash as Hex });
  const [released] = parseEventLogs({ abi: escrowAbi, logs: receipt.logs, eventName: "Released" });
  const args = released!.args as { feeRecipient: Address; feeAmount: bigint; treasury: Address; treasuryAmount: bigint };
  assert.equal(args.feeRecipient.toLowerCase(), TREASURY.toLowerCase());
  assert.equal(args.feeAmount + args.treasuryAmount, FEE_RAW);
  assert.equal(args.treasuryAmount, SHARE_RAW);
});

test("the revenue report shows the partner's part as owedToPartnerUsdc, exactly; a partner with a fee wallet is owed nothing", async () => {
  const report = await stack.service.admin<{ partners: Revenue[]; totals: { owedToPartnerUsdc: number; owedToPartnerUsdcRaw: string } }>("GET", `/revenue?month=${mexicoMonth(new Date())}`);
  assert.equal(report.status, 200);
  const row = report.body.partners.find((partner) => partner.partnerId === walletless.id)!;
  assert.equal(row.feeOrders, 1);
  assert.equal(BigInt(row.partnerFees.usdcRaw), FEE_RAW);
  assert.equal(BigInt(row.serviceShare.usdcRaw), SHARE_RAW);
  assert.equal(BigInt(row.partnerNet.usdcRaw), OWED_RAW);
  assert.equal(row.owedToPartnerUsdcRaw, OWED_RAW.toString());
  assert.equal(row.owedToPartnerUsdc, 0.827473);
  assert.equal(report.body.totals.owedToPartnerUsdcRaw, OWED_RAW.toString());

  const one = await stack.service.admin<Revenue>("GET", `/partners/${walletless.id}/revenue`);
  assert.equal(one.body.owedToPartnerUsdcRaw, OWED_RAW.toString());
  const other = await stack.service.admin<Revenue>("GET", `/partners/${withWallet.id}/revenue`);
  assert.equal(other.body.owedToPartnerUsdc, 0);
  assert.equal(other.body.owedToPartnerUsdcRaw, "0");
});

test("a partner with a fee wallet keeps it as the fee recipient", async () => {
  const placed = await placeOrder(as(withWallet), { amountUsdc: 10, feePercent: 1, feeRecipient: "PARTNER" });
  const terms = (placed.deposit as { terms: { feeRecipient: string } }).terms;
  assert.equal(terms.feeRecipient.toLowerCase(), `0x${"ab".repeat(20)}`);
});
