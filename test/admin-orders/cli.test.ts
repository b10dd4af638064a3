import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { after, before, test } from "node:test";
import { disputedOrder, waitForAdminStatus, type DisputedOrder } from "../disputes/support.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { placeOrder, startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";
import { repoRoot as ROOT } from "../../src/paths.ts";

// `npm run admin -- orders|deliveries|stats|machine|revenue ...` run as a child process against a
// service on the real chain, as an operator would.

const CLI = path.join(ROOT, "src/cli/admin.ts");

let stack: TradeStack;
let receiver: TestReceiver;
let disputed: DisputedOrder;

before(async () => {
  receiver = await startReceiver();
  stack = await startTradeStack({}, { webhookUrl: receiver.url });
  disputed = await disputedOrder(stack, { by: "SELLER", buyerWallet: 1 });
});
after(async () => {
  await stack?.close();
  await receiver?.close();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", OFFRAMP_URL: stack.service.baseUrl, ADMIN_TOKEN } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function json<T = Record<string, unknown>>(run: Run): T {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

test("orders list --status DISPUTED prints the disputed orders of every partner", async () => {
  const page = json<{ orders: { id: string; status: string }[]; total: number }>(await cli(["orders", "list", "--status", "DISPUTED"]));
  assert.deepEqual(page.orders.map((order) => order.id), [disputed.id]);
});

test("orders list passes the partner, user and risk filters", async () => {
  const page = json<{ orders: unknown[] }>(await cli(["orders", "list", "--partner", stack.partner.id, "--aml-risk", "HIGH", "--limit", "5"]));
  assert.deepEqual(page.orders, []);
});

test("orders get prints the order with its machine snapshot and path", async () => {
  const order = json<{ id: string; machine: { value: string }; path: { state: string }[] }>(await cli(["orders", "get", disputed.id]));
  assert.equal(order.machine.value, "DISPUTED");
  assert.deepEqual(order.path.map((step) => step.state), ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "DISPUTED"]);
});

test("orders resolve without --outcome exits 2 naming the outcomes", async () => {
  const run = await cli(["orders", "resolve", disputed.id]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--outcome is required/);
});

test("orders resolve of an order that is not disputed exits 1 with ORDER_NOT_DISPUTED", async () => {
  const pending = await placeOrder(stack);
  const run = await cli(["orders", "resolve", pending.id, "--outcome", "BUYER"]);
  assert.equal(run.code, 1);
  assert.equal((JSON.parse(run.stderr) as { error: string }).error, "ORDER_NOT_DISPUTED");
});

test("orders resolve --outcome SELLER --note sends the resolution, and the order ends REFUNDED", async () => {
  const answer = json<{ dispute: { resolutionRequest: { outcome: string; note: string } } }>(
    await cli(["orders", "resolve", disputed.id, "--outcome", "SELLER", "--note", "no SPEI payment found"]),
  );
  assert.deepEqual(
    { outcome: answer.dispute.resolutionRequest.outcome, note: answer.dispute.resolutionRequest.note },
    { outcome: "SELLER", note: "no SPEI payment found" },
  );
  await waitForAdminStatus(stack, disputed.id, "REFUNDED");
});

test("stats prints the order counts per state and deliveries per status", async () => {
  const stats = json<{ orders: { byStatus: Record<string, number> }; deliveries: { byStatus: Record<string, number> } }>(await cli(["stats"]));
  assert.equal(Object.keys(stats.orders.byStatus).length, 8);
  assert.ok(stats.deliveries.byStatus.DELIVERED! + stats.deliveries.byStatus.PENDING! > 0);
});

test("machine prints the state machine's definition", async () => {
  const machine = json<{ finalStates: string[] }>(await cli(["machine"]));
  assert.deepEqual([...machine.finalStates].sort(), ["COMPLETED", "EXPIRED", "REFUNDED"]);
});

test("revenue --month prints that month's report, and --partner one partner's", async () => {
  const report = json<{ month: string; partners: unknown[] }>(await cli(["revenue", "--month", "2020-01"]));
  assert.deepEqual([report.month, report.partners], ["2020-01", []]);
  const one = json<{ partnerId: string; completedOrders: number }>(await cli(["revenue", "--partner", stack.partner.id]));
  assert.equal(one.partnerId, stack.partner.id);
});

test("deliveries list --order and deliveries redeliver start a new attempt series", async () => {
  const page = json<{ deliveries: { id: string; eventType: string; series: number }[] }>(await cli(["deliveries", "list", "--order", disputed.id, "--event-type", "order.disputed"]));
  assert.equal(page.deliveries.length, 1);
  const delivery = page.deliveries[0]!;
  const again = json<{ id: string; series: number }>(await cli(["deliveries", "redeliver", delivery.id]));
  assert.deepEqual([again.id, again.series], [delivery.id, delivery.series + 1]);
  await waitFor("the redelivery to reach the endpoint", async () => {
    const copies = receiver.requests.filter((request) => request.headers["x-webhook-id"] === delivery.id);
    return copies.length >= 2 ? copies : undefined;
  });
});
