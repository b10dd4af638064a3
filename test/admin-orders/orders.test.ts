import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { disputeOrder, resolve, type AdminOrderDetail } from "../disputes/support.ts";
import { decide, startSession } from "../kyc/helpers.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { placeOrder, startTradeStack, waitFor, waitForSettled, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";

// GET /admin/v1/orders, /orders/:id and /stats (decisions section 12) over orders of two partners taken
// to every state but PENDING_RELEASE through the real chain and indexer.

interface ListItem {
  id: string;
  status: string;
  partnerId: string;
  partnerUserRef: string;
  amlRiskLevel: string;
  amlRiskScore: number;
}
interface Page {
  orders: ListItem[];
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}
interface Stats {
  orders: { byStatus: Record<string, number>; total: number };
  deliveries: { byStatus: Record<string, number>; total: number };
  queues: { disputes: number; highRisk: number; sanctionsHolds: number; thirdPartyPayments: number };
}

let stack: TradeStack;
let okReceiver: TestReceiver;
let failingReceiver: TestReceiver;
let partnerB: { id: string; apiKey: string };
/** Order ids by name, in creation order. */
const orders: Record<string, string> = {};
let created: string[] = [];

async function place(name: string, partner: { id: string; apiKey: string }, ref: string, amountUsdc = 100): Promise<string> {
  const order = await placeOrder({ service: stack.service, partner: { ...partner, webhookSecret: "" } }, { ref, amountUsdc });
  orders[name] = order.id;
  created.push(order.id);
  return order.id;
}

const asA = () => ({ ...stack, partner: stack.partner });
const sandbox = (path: string, body?: unknown) => stack.service.api("POST", `/sandbox/orders/${path}`, { key: stack.partner.apiKey, ...(body ? { body } : {}) });
const list = (query: string) => stack.service.admin<Page>("GET", `/orders${query}`);

before(async () => {
  okReceiver = await startReceiver();
  failingReceiver = await startReceiver(() => 500);
  stack = await startTradeStack({}, { webhookUrl: okReceiver.url });
  partnerB = await stack.service.createPartner({ name: "Partner B", tier: "GROWTH", kycModel: "SERVICE_PROVIDED", webhookUrl: failingReceiver.url });
  created = [];

  // Partner A: one order in each state the chain can reach without a payment.
  await place("pending", stack.partner, "alice");
  await place("expired", stack.partner, "alice");
  assertStatus(await stack.service.api("POST", `/orders/${orders.expired}/cancel`, { key: stack.partner.apiKey }), 200);
  await place("active", stack.partner, "bob");
  assertStatus(await sandbox(`${orders.active}/deposit`), 200);
  await place("locked", stack.partner, "bob");
  assertStatus(await sandbox(`${orders.locked}/deposit`), 200);
  await waitForStatus(asA(), orders.locked!, "ACTIVE");
  assertStatus(await sandbox(`${orders.locked}/lock`, { buyerWallet: 1 }), 200);
  const disputedId = await place("disputed", stack.partner, "carol");
  await disputeOrder(asA(), { id: disputedId, escrowOrderId: "" }, { by: "BUYER", buyerWallet: 2 });
  await place("refunded", stack.partner, "carol");
  assertStatus(await sandbox(`${orders.refunded}/deposit`), 200);
  await waitForStatus(asA(), orders.refunded!, "ACTIVE");
  assertStatus(await stack.service.api("POST", `/orders/${orders.refunded}/cancel`, { key: stack.partner.apiKey }), 200);
  const completedId = await place("completed", stack.partner, "dave");
  await disputeOrder(asA(), { id: completedId, escrowOrderId: "" }, { by: "BUYER", buyerWallet: 3 });
  await resolve(stack, completedId, "BUYER");

  // Partner B (service-provided KYC): a politically exposed user's large order is HIGH risk
  // (amount >= 100,000 MXN +30, PEP +30, account younger than a day +10); another user's is LOW.
  assertStatus(await stack.service.api("POST", "/users", { key: partnerB.apiKey, body: { partnerUserRef: "pep" } }), 201);
  const session = await startSession(stack.service, partnerB.apiKey, "pep", "FULL");
  await decide(stack.service, partnerB.apiKey, session.sessionId, "APPROVED", { isPep: true });
  await place("highRisk", partnerB, "pep", 6000);
  await place("otherPartner", partnerB, "alice");

  for (const [name, status] of [
    ["active", "ACTIVE"],
    ["locked", "LOCKED"],
    ["refunded", "REFUNDED"],
    ["completed", "COMPLETED"],
  ] as const) {
    await waitForStatus(asA(), orders[name]!, status);
  }
});
after(async () => {
  await stack?.close();
  await okReceiver?.close();
  await failingReceiver?.close();
});

describe("GET /admin/v1/orders", () => {
  test("lists every partner's orders, newest first", async () => {
    const page = await list("?limit=100");
    assertStatus(page, 200);
    assert.deepEqual(
      page.body.orders.map((order) => order.id),
      [...created].reverse(),
    );
    assert.equal(page.body.total, created.length);
    assert.deepEqual(new Set(page.body.orders.map((order) => order.partnerId)), new Set([stack.partner.id, partnerB.id]));
  });

  test("filters by status", async () => {
    const page = await list("?status=LOCKED");
    assert.deepEqual(page.body.orders.map((order) => order.id), [orders.locked]);
    assert.equal(page.body.total, 1);
  });

  test("filters by partner", async () => {
    const page = await list(`?partnerId=${partnerB.id}`);
    assert.deepEqual(page.body.orders.map((order) => order.id), [orders.otherPartner, orders.highRisk]);
  });

  test("filters by partnerUserRef across partners, or within one with partnerId", async () => {
    const everywhere = await list("?partnerUserRef=alice");
    assert.deepEqual(everywhere.body.orders.map((order) => order.id), [orders.otherPartner, orders.expired, orders.pending]);
    const withinA = await list(`?partnerUserRef=alice&partnerId=${stack.partner.id}`);
    assert.deepEqual(withinA.body.orders.map((order) => order.id), [orders.expired, orders.pending]);
  });

  test("filters by AML risk level: the high-risk queue", async () => {
    const page = await list("?amlRiskLevel=HIGH");
    assert.deepEqual(page.body.orders.map((order) => order.id), [orders.highRisk]);
    assert.equal(page.body.orders[0]!.amlRiskLevel, "HIGH");
    assert.ok(page.body.orders[0]!.amlRiskScore >= 70, String(page.body.orders[0]!.amlRiskScore));
  });

  test("combines filters", async () => {
    const page = await list(`?status=PENDING_DEPOSIT&partnerId=${stack.partner.id}`);
    assert.deepEqual(page.body.orders.map((order) => order.id), [orders.pending]);
  });

  test("pages with limit and offset and says whether more remain", async () => {
    const first = await list("?limit=2");
    assert.deepEqual(first.body.orders.map((order) => order.id), [...created].reverse().slice(0, 2));
    assert.deepEqual([first.body.total, first.body.limit, first.body.offset, first.body.hasMore], [created.length, 2, 0, true]);
    const last = await list(`?limit=2&offset=${created.length - 1}`);
    assert.deepEqual(last.body.orders.map((order) => order.id), [created[0]]);
    assert.equal(last.body.hasMore, false);
  });

  test("an unknown status, a limit out of range or an unknown parameter is VALIDATION_ERROR", async () => {
    assertError(await list("?status=PAID"), 400, "VALIDATION_ERROR");
    assertError(await list("?limit=101"), 400, "VALIDATION_ERROR");
    assertError(await list("?amlRiskLevel=EXTREME"), 400, "VALIDATION_ERROR");
    assertError(await list("?colour=red"), 400, "VALIDATION_ERROR");
  });
});

describe("GET /admin/v1/orders/:id", () => {
  let detail: AdminOrderDetail & { partnerId: string };
  let machine: { transitions: { from: string; to: string; event: string }[] };
  before(async () => {
    await waitForSettled("the completed order's transactions", async () => (await stack.service.admin<AdminOrderDetail>("GET", `/orders/${orders.completed}`)).body.transactions);
    const response = await stack.service.admin<AdminOrderDetail & { partnerId: string }>("GET", `/orders/${orders.completed}`);
    assertStatus(response, 200);
    detail = response.body;
    machine = (await stack.service.admin<typeof machine>("GET", "/machine")).body;
  });

  test("shows the machine snapshot, whose state is the order's status", () => {
    assert.equal(detail.machine.value, "COMPLETED");
    assert.equal(detail.machine.value, detail.status);
    assert.equal(detail.machine.context.orderId, orders.completed);
    assert.ok(detail.machine.version > 1);
  });

  test("shows the order's path through the chart, each step an edge of the machine", () => {
    assert.deepEqual(detail.path.map((step) => step.state), ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "DISPUTED", "COMPLETED"]);
    for (let index = 1; index < detail.path.length; index += 1) {
      const [from, to] = [detail.path[index - 1]!, detail.path[index]!];
      assert.ok(
        machine.transitions.some((edge) => edge.from === from.state && edge.to === to.state && edge.event === to.event),
        `${from.state} -${to.event}-> ${to.state} is not an edge`,
      );
    }
  });

  test("shows the webhook deliveries of the order in sequence order", async () => {
    await waitFor("the deliveries to be sent", async () => {
      const fresh = await stack.service.admin<AdminOrderDetail>("GET", `/orders/${orders.completed}`);
      return fresh.body.deliveries.every((delivery) => delivery.status === "DELIVERED") ? true : undefined;
    });
    const received = okReceiver.requests.map((request) => JSON.parse(request.rawBody) as { event: string; data: { orderId: string; sequence: number } });
    const ofOrder = received.filter((payload) => payload.data.orderId === orders.completed).sort((a, b) => a.data.sequence - b.data.sequence);
    assert.deepEqual(
      detail.deliveries.map((delivery) => [delivery.sequence, delivery.eventType]),
      ofOrder.map((payload) => [payload.data.sequence, payload.event]),
    );
  });

  test("shows the chain transactions the service sent for it, with their hashes", () => {
    assert.deepEqual(
      detail.transactions.map((tx) => [tx.action, tx.status, tx.signer]),
      [["resolveDispute", "MINED", "arbiter"]],
    );
    assert.match(detail.transactions[0]!.txHash ?? "", /^0x[0-9a-f]{64}$/);
  });

  test("says which partner the order belongs to", () => {
    assert.equal(detail.partnerId, stack.partner.id);
  });

  test("an unknown order is 404 NOT_FOUND", async () => {
    assertError(await stack.service.admin("GET", "/orders/ord_unknown"), 404, "NOT_FOUND");
  });
});

describe("GET /admin/v1/stats", () => {
  test("counts the orders in each state", async () => {
    const stats = await stack.service.admin<Stats>("GET", "/stats");
    assertStatus(stats, 200);
    assert.deepEqual(stats.body.orders.byStatus, {
      PENDING_DEPOSIT: 3,
      ACTIVE: 1,
      LOCKED: 1,
      PENDING_RELEASE: 0,
      COMPLETED: 1,
      EXPIRED: 1,
      REFUNDED: 1,
      DISPUTED: 1,
    });
    assert.equal(stats.body.orders.total, created.length);
  });

  test("sizes the dispute and high-risk queues", async () => {
    const stats = await stack.service.admin<Stats>("GET", "/stats");
    assert.deepEqual(stats.body.queues, { disputes: 1, highRisk: 1, sanctionsHolds: 0, thirdPartyPayments: 0 });
  });

  test("counts deliveries per status: delivered to the answering endpoint, pending at the failing one", async () => {
    const bEvents = await stack.service.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1", [partnerB.id]);
    const aEvents = await stack.service.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1", [stack.partner.id]);
    const delivered = await waitFor("every event of partner A to reach its endpoint", async () => {
      const ids = new Set(okReceiver.requests.map((request) => request.headers["x-webhook-id"]));
      return ids.size === aEvents.rows[0]!.n ? ids.size : undefined;
    });
    await waitFor("partner B's endpoint to have refused each first attempt", async () => {
      const ids = new Set(failingReceiver.requests.map((request) => request.headers["x-webhook-id"]));
      return ids.size === bEvents.rows[0]!.n ? true : undefined;
    });
    // A delivery is marked DELIVERED just after the endpoint answers: give the worker that moment.
    const stats = await waitFor("the last delivery to be recorded", async () => {
      const answer = await stack.service.admin<Stats>("GET", "/stats");
      return answer.body.deliveries.byStatus.DELIVERED === delivered ? answer : undefined;
    }, 5_000);
    assert.deepEqual(stats.body.deliveries.byStatus, { PENDING: bEvents.rows[0]!.n, DELIVERED: delivered, FAILED: 0 });
    assert.equal(stats.body.deliveries.total, delivered + bEvents.rows[0]!.n);
  });
});
