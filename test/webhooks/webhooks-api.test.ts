// GET /api/v1/webhooks (the partner's delivery history) and the operator's delivery routes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { DeliveryRecord } from "../../src/webhooks/deliveries.ts";
import { listOrderDeliveries } from "../../src/webhooks/deliveries.ts";
import { assertError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { createOrderFixture, emit, type OrderFixture } from "./support/fixtures.ts";
import { startReceiver, waitFor, type TestReceiver } from "./support/receiver.ts";

interface Page<T = DeliveryRecord> {
  deliveries: T[];
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

let service: TestService;
let receiver: TestReceiver;
let partnerA: { id: string; apiKey: string };
let partnerB: { id: string; apiKey: string };
let orderA1: OrderFixture;
let orderA4: OrderFixture;
let orderA2: OrderFixture;
let orderA3: OrderFixture;
let orderB: OrderFixture;
/** Partner A's delivery ids in the order their events were recorded. */
const recordedA: string[] = [];
let failedId: string;
let pendingId: string;
let deliveredB: string;

before(async () => {
  // Failures are retried at once, so a failing delivery reaches FAILED within the set-up; an attempt
  // that hangs stays in flight (PENDING) for the whole file.
  service = await startTestService({ WEBHOOK_RETRY_DELAYS_SECONDS: "0,0,0,0,0", WEBHOOK_TIMEOUT_MS: "60000" });
  receiver = await startReceiver((request) => {
    const { event } = JSON.parse(request.rawBody) as { event: string };
    if (event === "order.disputed") return 500;
    if (event === "order.locked") return "hang";
    return 200;
  });
  partnerA = await service.createPartner({ webhookUrl: receiver.url });
  partnerB = await service.createPartner({ webhookUrl: receiver.url });
  orderA1 = await createOrderFixture(service.pool, partnerA.id);
  orderA2 = await createOrderFixture(service.pool, partnerA.id);
  orderA3 = await createOrderFixture(service.pool, partnerA.id);
  orderA4 = await createOrderFixture(service.pool, partnerA.id);
  orderB = await createOrderFixture(service.pool, partnerB.id);
  for (let i = 0; i < 12; i++) {
    const [type, status] = i % 2 === 0 ? (["order.created", "PENDING_DEPOSIT"] as const) : (["order.deposit_confirmed", "ACTIVE"] as const);
    recordedA.push((await emit(service, i < 6 ? orderA1 : orderA4, type, status)).deliveryId!);
  }
  recordedA.push((await emit(service, orderA2, "order.created", "PENDING_DEPOSIT")).deliveryId!);
  failedId = (await emit(service, orderA2, "order.disputed", "DISPUTED")).deliveryId!;
  recordedA.push(failedId);
  pendingId = (await emit(service, orderA3, "order.locked", "LOCKED")).deliveryId!;
  recordedA.push(pendingId);
  deliveredB = (await emit(service, orderB, "order.created", "PENDING_DEPOSIT")).deliveryId!;
  await waitFor("every delivery settled", async () => {
    const { rows } = await service.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'PENDING' OR id = $1",
      [pendingId],
    );
    return rows[0]!.n === 16 && receiver.requests.some((r) => r.headers["x-webhook-id"] === pendingId);
  }, 30_000);
});
after(async () => {
  await receiver.close();
  await service.close();
});

async function list(key: string, query = ""): Promise<Page> {
  const response = await service.api<Page>("GET", `/webhooks${query}`, { key });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

describe("GET /webhooks", () => {
  test("lists the partner's deliveries newest first, with total, limit, offset and hasMore", async () => {
    const page = await list(partnerA.apiKey);
    assert.equal(page.total, 15);
    assert.equal(page.limit, 20);
    assert.equal(page.offset, 0);
    assert.equal(page.hasMore, false);
    assert.deepEqual(page.deliveries.map((d) => d.id), [...recordedA].reverse());
  });

  test("a partner never sees another partner's deliveries, not even by filtering on its order", async () => {
    const b = await list(partnerB.apiKey);
    assert.deepEqual(b.deliveries.map((d) => d.id), [deliveredB]);
    assert.equal(b.total, 1);
    const probing = await list(partnerB.apiKey, `?orderId=${orderA1.orderId}`);
    assert.deepEqual(probing.deliveries, []);
    assert.equal(probing.total, 0);
    assert.ok(!(await list(partnerA.apiKey, "?limit=100")).deliveries.some((d) => d.id === deliveredB));
  });

  test("filters by status", async () => {
    const delivered = await list(partnerA.apiKey, "?status=DELIVERED");
    assert.equal(delivered.total, 13);
    assert.ok(delivered.deliveries.every((d) => d.status === "DELIVERED"));
    const failed = await list(partnerA.apiKey, "?status=FAILED");
    assert.deepEqual(failed.deliveries.map((d) => [d.id, d.attempts, d.errorMessage]), [[failedId, 5, "HTTP 500"]]);
    const pending = await list(partnerA.apiKey, "?status=PENDING");
    assert.deepEqual(pending.deliveries.map((d) => [d.id, d.attempts]), [[pendingId, 0]]);
  });

  test("filters by orderId and by eventType, alone and together", async () => {
    const byOrder = await list(partnerA.apiKey, `?orderId=${orderA2.orderId}`);
    assert.deepEqual(byOrder.deliveries.map((d) => d.eventType), ["order.disputed", "order.created"]);
    assert.ok(byOrder.deliveries.every((d) => d.orderId === orderA2.orderId));
    const byType = await list(partnerA.apiKey, "?eventType=order.created&limit=100");
    assert.equal(byType.total, 7);
    assert.ok(byType.deliveries.every((d) => d.eventType === "order.created"));
    const both = await list(partnerA.apiKey, `?orderId=${orderA1.orderId}&eventType=order.deposit_confirmed&status=DELIVERED`);
    assert.equal(both.total, 3);
    assert.ok(both.deliveries.every((d) => d.orderId === orderA1.orderId && d.eventType === "order.deposit_confirmed"));
  });

  test("pages with limit and offset", async () => {
    const pages = [await list(partnerA.apiKey, "?limit=6"), await list(partnerA.apiKey, "?limit=6&offset=6"), await list(partnerA.apiKey, "?limit=6&offset=12")];
    assert.deepEqual(pages.map((p) => [p.limit, p.offset, p.total, p.hasMore, p.deliveries.length]), [
      [6, 0, 15, true, 6],
      [6, 6, 15, true, 6],
      [6, 12, 15, false, 3],
    ]);
    assert.deepEqual(pages.flatMap((p) => p.deliveries.map((d) => d.id)), [...recordedA].reverse());
    const beyond = await list(partnerA.apiKey, "?offset=40");
    assert.deepEqual([beyond.deliveries.length, beyond.total, beyond.hasMore], [0, 15, false]);
  });

  test("an unknown status, a limit outside 1 to 100, a bad offset or an unknown parameter is VALIDATION_ERROR", async () => {
    for (const query of ["?status=SENT", "?limit=0", "?limit=101", "?limit=ten", "?limit=2.5", "?offset=-1", "?offset=1.5", "?page=2"]) {
      assertError(await service.api("GET", `/webhooks${query}`, { key: partnerA.apiKey }), 400, "VALIDATION_ERROR");
    }
  });

  test("requires the API key", async () => {
    assertError(await service.api("GET", "/webhooks"), 401, "MISSING_API_KEY");
  });
});

describe("admin deliveries", () => {
  test("GET /admin/v1/deliveries lists every partner's deliveries and filters by partnerId", async () => {
    const all = await service.admin<Page<DeliveryRecord & { partnerId: string }>>("GET", "/deliveries?limit=100");
    assert.equal(all.status, 200);
    assert.equal(all.body.total, 16);
    const onlyB = await service.admin<Page<DeliveryRecord & { partnerId: string }>>("GET", `/deliveries?partnerId=${partnerB.id}`);
    assert.deepEqual(onlyB.body.deliveries.map((d) => [d.id, d.partnerId]), [[deliveredB, partnerB.id]]);
    const failed = await service.admin<Page>("GET", "/deliveries?status=FAILED");
    assert.deepEqual(failed.body.deliveries.map((d) => d.id), [failedId]);
  });

  test("GET /admin/v1/deliveries/:id shows the payload as sent and every attempt", async () => {
    const detail = await service.admin<{ body: string; attemptLog: { attempt: number; responseStatus: number }[] }>("GET", `/deliveries/${failedId}`);
    assert.equal(detail.status, 200);
    const sent = receiver.requests.filter((r) => r.headers["x-webhook-id"] === failedId);
    assert.equal(sent.length, 5);
    assert.ok(sent.every((r) => r.rawBody === detail.body.body));
    assert.deepEqual(detail.body.attemptLog.map((a) => [a.attempt, a.responseStatus]), [[1, 500], [2, 500], [3, 500], [4, 500], [5, 500]]);
    assertError(await service.admin("GET", "/deliveries/whd_nope"), 404, "NOT_FOUND");
  });

  test("the admin routes require the admin token", async () => {
    const response = await fetch(`${service.baseUrl}/admin/v1/deliveries`);
    assert.equal(response.status, 401);
  });

  test("an order's deliveries are listed in sequence order for the order detail", async () => {
    const deliveries = await listOrderDeliveries(service.pool, orderA2.orderId);
    assert.deepEqual(deliveries.map((d) => [d.sequence, d.eventType, d.status]), [
      [1, "order.created", "DELIVERED"],
      [2, "order.disputed", "FAILED"],
    ]);
  });
});
