// Webhook delivery against real receivers on 127.0.0.1 (decisions section 9): signed, retried on the
// WEBHOOK_RETRY_DELAYS_SECONDS schedule, FAILED after the 5th failure, recorded as the spec's table says.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { withTransaction } from "../../src/db/pool.ts";
import type { DeliveryRecord } from "../../src/webhooks/deliveries.ts";
import { recordEvent } from "../../src/webhooks/outbox.ts";
import { DELIVERY_QUEUE } from "../../src/jobs/queues.ts";
import { enqueueAttempt } from "../../src/webhooks/queue.ts";
import { signWebhook } from "../../src/webhooks/signature.ts";
import { sweepStalledDeliveries } from "../../src/workers/webhook-deliveries.ts";
import { ISO_MILLIS } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { createOrderFixture, emit, type OrderFixture } from "./support/fixtures.ts";
import { sleep, startReceiver, waitFor, type Behaviour, type TestReceiver } from "./support/receiver.ts";

const TIMEOUT_MS = 1500;
// Distinct delays so an off-by-one in the schedule shows: after failure 1 wait 1 s, after failure 2 wait 2 s...
const DELAYS = [1, 2, 1, 1, 1];

let service: TestService;
const receivers: TestReceiver[] = [];
before(async () => {
  service = await startTestService({ WEBHOOK_RETRY_DELAYS_SECONDS: DELAYS.join(","), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) });
});
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

interface Setup {
  receiver: TestReceiver;
  partner: { id: string; apiKey: string; webhookSecret: string };
  order: OrderFixture;
}

/** A partner whose webhook URL is a fresh receiver with the given behaviour, and one order of it. */
async function setup(behaviour?: Behaviour): Promise<Setup> {
  const receiver = await startReceiver(behaviour);
  receivers.push(receiver);
  const partner = await service.createPartner({ webhookUrl: receiver.url });
  const order = await createOrderFixture(service.pool, partner.id);
  return { receiver, partner, order };
}

async function deliveriesOf(key: string, query = ""): Promise<DeliveryRecord[]> {
  const response = await service.api<{ deliveries: DeliveryRecord[] }>("GET", `/webhooks${query}`, { key });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.deliveries;
}

async function delivery(key: string, id: string): Promise<DeliveryRecord> {
  const found = (await deliveriesOf(key, "?limit=100")).find((d) => d.id === id);
  assert.ok(found, `delivery ${id} is listed`);
  return found;
}

function waitForStatus(key: string, id: string, status: string, timeoutMs = 20_000): Promise<DeliveryRecord> {
  return waitFor(`delivery ${id} ${status}`, async () => {
    const record = await delivery(key, id);
    return record.status === status ? record : undefined;
  }, timeoutMs);
}

interface AttemptLogEntry {
  attempt: number;
  startedAt: string;
  finishedAt: string;
  responseStatus: number | null;
  errorMessage: string | null;
}

async function attemptLog(id: string): Promise<AttemptLogEntry[]> {
  const response = await service.admin<{ attemptLog: AttemptLogEntry[] }>("GET", `/deliveries/${id}`);
  assert.equal(response.status, 200);
  return response.body.attemptLog;
}

describe("a successful delivery", () => {
  test("POSTs the event to the partner URL with the id, timestamp and signature headers", async () => {
    const { receiver, partner, order } = await setup();
    const before = Math.floor(Date.now() / 1000);
    const event = await emit(service, order, "order.deposit_confirmed", "ACTIVE", { escrowTxHash: "0xabc" });
    await waitFor("the request", () => receiver.requests[0]);
    const request = receiver.requests[0]!;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/hooks/offramp");
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers["x-webhook-id"], event.deliveryId);
    const timestamp = Number(request.headers["x-webhook-timestamp"]);
    assert.ok(Number.isInteger(timestamp) && timestamp >= before && timestamp <= Math.ceil(Date.now() / 1000), `timestamp ${timestamp}`);
    assert.match(String(request.headers["x-webhook-signature"]), /^[0-9a-f]{64}$/);
    assert.equal(request.headers["x-webhook-signature"], signWebhook(partner.webhookSecret, timestamp, request.rawBody));
  });

  test("sends the payload { event, timestamp, data } with orderId, status, partnerUserRef, sequence and the event's fields", async () => {
    const { receiver, order } = await setup();
    const occurredAt = new Date("2026-11-21T17:05:09.123Z");
    await withTransaction(service.pool, (tx) =>
      recordEvent(tx, {
        partnerId: order.partnerId,
        orderId: order.orderId,
        partnerUserRef: order.partnerUserRef,
        eventType: "order.completed",
        status: "COMPLETED",
        data: { completedAt: occurredAt, releaseTxHash: "0xfeed" },
        occurredAt,
      }, { boss: service.boss }),
    );
    await waitFor("the request", () => receiver.requests[0]);
    assert.deepEqual(JSON.parse(receiver.requests[0]!.rawBody), {
      event: "order.completed",
      timestamp: "2026-11-21T17:05:09.123Z",
      data: {
        orderId: order.orderId,
        status: "COMPLETED",
        partnerUserRef: order.partnerUserRef,
        sequence: 1,
        completedAt: "2026-11-21T17:05:09.123Z",
        releaseTxHash: "0xfeed",
      },
    });
  });

  test("sends a partnerUserRef that spells the sequence field byte for byte, with the event's own sequence", async () => {
    // The payload is serialized with a stand-in sequence and cut there (webhooks/outbox.ts): a reference
    // holding the stand-in's text must neither move the cut nor be rewritten.
    const receiver = await startReceiver();
    receivers.push(receiver);
    const partner = await service.createPartner({ webhookUrl: receiver.url });
    const hostileRef = `"sequence":0,"sequence":0}\\"sequence":0 \u2028"status":"COMPLETED"`;
    const order = await createOrderFixture(service.pool, partner.id, hostileRef);
    const occurredAt = new Date("2026-11-21T17:05:09.123Z");
    for (const [eventType, status] of [["order.created", "PENDING_DEPOSIT"], ["order.expired", "EXPIRED"]] as const) {
      await withTransaction(service.pool, (tx) =>
        recordEvent(tx, { partnerId: order.partnerId, orderId: order.orderId, partnerUserRef: hostileRef, eventType, status, data: {}, occurredAt }, { boss: service.boss }),
      );
    }
    await waitFor("both requests", () => (receiver.requests.length === 2 ? receiver.requests : undefined));
    const expected = (event: string, status: string, sequence: number) =>
      JSON.stringify({ event, timestamp: occurredAt.toISOString(), data: { orderId: order.orderId, status, partnerUserRef: hostileRef, sequence } });
    const bodies = receiver.requests.map((request) => request.rawBody).sort();
    assert.deepEqual(bodies, [expected("order.created", "PENDING_DEPOSIT", 1), expected("order.expired", "EXPIRED", 2)].sort());
    const { rows } = await service.pool.query<{ body: string }>("SELECT body FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [order.orderId]);
    assert.deepEqual(rows.map((row) => row.body), [expected("order.created", "PENDING_DEPOSIT", 1), expected("order.expired", "EXPIRED", 2)]);
  });

  test("is recorded DELIVERED after one attempt, with every field of the spec's record", async () => {
    const { partner, order } = await setup(() => 204);
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    const record = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.deepEqual(Object.keys(record).sort(), [
      "attempts", "createdAt", "deliveredAt", "errorMessage", "eventType", "id", "lastAttemptAt", "maxAttempts", "nextAttemptAt", "orderId", "status",
    ]);
    assert.equal(record.id, event.deliveryId);
    assert.match(record.id, /^whd_/);
    assert.equal(record.orderId, order.orderId);
    assert.equal(record.eventType, "order.created");
    assert.equal(record.attempts, 1);
    assert.equal(record.maxAttempts, 5);
    assert.equal(record.nextAttemptAt, null);
    assert.equal(record.errorMessage, null);
    for (const field of ["createdAt", "lastAttemptAt", "deliveredAt"] as const) assert.match(String(record[field]), ISO_MILLIS, field);
    assert.ok(Date.parse(record.createdAt) <= Date.parse(record.lastAttemptAt!));
    assert.ok(Date.parse(record.lastAttemptAt!) <= Date.parse(record.deliveredAt!));
  });
});

describe("retries", () => {
  test("a failed attempt is retried after the next delay, and the record shows attempts, nextAttemptAt and errorMessage", async () => {
    const statuses = [500, 503, 200];
    const { receiver, partner, order } = await setup((_request, index) => statuses[index] ?? 200);
    const event = await emit(service, order, "order.locked", "LOCKED", { buyerWallet: "0x1111111111111111111111111111111111111111" });
    const id = event.deliveryId!;

    const afterFirst = await waitFor("the first failure recorded", async () => {
      const record = await delivery(partner.apiKey, id);
      return record.attempts === 1 ? record : undefined;
    });
    assert.equal(afterFirst.status, "PENDING");
    assert.equal(afterFirst.errorMessage, "HTTP 500");
    assert.equal(afterFirst.deliveredAt, null);
    const waited = Date.parse(afterFirst.nextAttemptAt!) - Date.parse(afterFirst.lastAttemptAt!);
    assert.ok(waited >= DELAYS[0]! * 1000 && waited < DELAYS[0]! * 1000 + TIMEOUT_MS, `nextAttemptAt is ${waited} ms after lastAttemptAt`);

    const done = await waitForStatus(partner.apiKey, id, "DELIVERED");
    assert.equal(done.attempts, 3);
    assert.equal(done.errorMessage, null);
    assert.equal(done.nextAttemptAt, null);

    assert.equal(receiver.requests.length, 3);
    const gap1 = receiver.requests[1]!.receivedAt - receiver.requests[0]!.receivedAt;
    const gap2 = receiver.requests[2]!.receivedAt - receiver.requests[1]!.receivedAt;
    assert.ok(gap1 >= DELAYS[0]! * 1000, `second attempt ${gap1} ms after the first`);
    assert.ok(gap2 >= DELAYS[1]! * 1000, `third attempt ${gap2} ms after the second`);
    const log = await attemptLog(id);
    assert.deepEqual(log.map((a) => [a.attempt, a.responseStatus, a.errorMessage]), [[1, 500, "HTTP 500"], [2, 503, "HTTP 503"], [3, 200, null]]);
  });

  test("every attempt carries the same X-Webhook-Id and exactly the same body bytes", async () => {
    const { receiver, order } = await setup((_request, index) => (index < 2 ? 500 : 200));
    const event = await emit(service, order, "order.disputed", "DISPUTED", { openedBy: "BUYER" });
    await waitFor("three attempts", () => receiver.requests.length >= 3);
    assert.deepEqual(new Set(receiver.requests.map((r) => r.headers["x-webhook-id"])), new Set([event.deliveryId]));
    assert.deepEqual(new Set(receiver.requests.map((r) => r.rawBody)), new Set([event.body]));
  });

  test("the 5th failure marks the delivery FAILED and no 6th attempt is made", async () => {
    const { receiver, partner, order } = await setup(() => 500);
    const event = await emit(service, order, "order.payment_verified", "PENDING_RELEASE", { cepTrackingKey: "MBAN01002611210000001" });
    const record = await waitForStatus(partner.apiKey, event.deliveryId!, "FAILED", 30_000);
    assert.equal(record.attempts, 5);
    assert.equal(record.maxAttempts, 5);
    assert.equal(record.nextAttemptAt, null);
    assert.equal(record.deliveredAt, null);
    assert.equal(record.errorMessage, "HTTP 500");
    assert.equal(receiver.requests.length, 5);
    const gaps = receiver.requests.slice(1).map((r, i) => r.receivedAt - receiver.requests[i]!.receivedAt);
    gaps.forEach((gap, i) => assert.ok(gap >= DELAYS[i]! * 1000, `attempt ${i + 2} came ${gap} ms after attempt ${i + 1}`));
    await sleep(DELAYS[4]! * 1000 + 1000);
    assert.equal(receiver.requests.length, 5);
  });

  test("a receiver that does not answer within WEBHOOK_TIMEOUT_MS is a failed attempt, retried", async () => {
    const { partner, order } = await setup((_request, index) => (index === 0 ? "hang" : 200));
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    const record = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.equal(record.attempts, 2);
    const [first, second] = await attemptLog(event.deliveryId!);
    assert.equal(first!.errorMessage, `Timed out after ${TIMEOUT_MS} ms`);
    assert.equal(first!.responseStatus, null);
    const took = Date.parse(first!.finishedAt) - Date.parse(first!.startedAt);
    assert.ok(took >= TIMEOUT_MS - 50 && took < TIMEOUT_MS + 1000, `the hung attempt took ${took} ms`);
    assert.equal(second!.responseStatus, 200);
  });

  test("a redirect is not followed: a 301 is a failed attempt and the Location is never called", async () => {
    const target = await startReceiver(() => 200);
    receivers.push(target);
    const { receiver, partner, order } = await setup(() => ({ status: 301, headers: { Location: target.url } }));
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    const record = await waitFor("two redirected attempts", async () => {
      const current = await delivery(partner.apiKey, event.deliveryId!);
      return current.attempts >= 2 ? current : undefined;
    });
    assert.equal(record.status, "PENDING");
    assert.equal(record.errorMessage, "HTTP 301 (redirects are not followed)");
    assert.ok(receiver.requests.length >= 2);
    assert.equal(target.requests.length, 0);
  });
});

describe("order of first attempts", () => {
  test("events of one order are first attempted in sequence order, each after the previous one's first attempt", async () => {
    // The receiver is slow, so with several workers a later event would overtake an earlier one.
    const { receiver, order } = await setup(async () => {
      await sleep(300);
      return 200;
    });
    const kinds = [
      ["order.created", "PENDING_DEPOSIT"],
      ["order.deposit_confirmed", "ACTIVE"],
      ["order.locked", "LOCKED"],
      ["order.payment_verified", "PENDING_RELEASE"],
      ["order.completed", "COMPLETED"],
    ] as const;
    // All committed at once, so all five are ready for the workers together.
    await withTransaction(service.pool, async (tx) => {
      for (const [eventType, status] of kinds) {
        await recordEvent(tx, { partnerId: order.partnerId, orderId: order.orderId, partnerUserRef: order.partnerUserRef, eventType, status, data: {} }, { boss: service.boss });
      }
    });
    await waitFor("five answered requests", () => receiver.requests.filter((r) => r.respondedAt).length === 5);
    const sequences = receiver.requests.map((r) => (JSON.parse(r.rawBody) as { data: { sequence: number } }).data.sequence);
    assert.deepEqual(sequences, [1, 2, 3, 4, 5]);
    for (let i = 1; i < receiver.requests.length; i++) {
      assert.ok(receiver.requests[i]!.receivedAt >= receiver.requests[i - 1]!.respondedAt!, `sequence ${i + 1} started before sequence ${i} was answered`);
    }
  });

  test("a failing earlier event does not hold back later events after its first attempt", async () => {
    const { receiver, partner, order } = await setup((request) => (JSON.parse(request.rawBody).data.sequence === 1 ? 500 : 200));
    const first = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    const second = await emit(service, order, "order.expired", "EXPIRED");
    const delivered = await waitForStatus(partner.apiKey, second.deliveryId!, "DELIVERED");
    assert.equal(delivered.attempts, 1);
    const pending = await delivery(partner.apiKey, first.deliveryId!);
    assert.equal(pending.status, "PENDING");
    assert.ok(receiver.requests[0]!.headers["x-webhook-id"] === first.deliveryId);
  });
});

describe("sequence", () => {
  test("concurrent events of one order get sequences 1..n without gaps or duplicates, even without the order lock", async () => {
    const partner = await service.createPartner();
    const order = await createOrderFixture(service.pool, partner.id);
    const recorded = await Promise.all(Array.from({ length: 12 }, () => emit(service, order, "order.locked", "LOCKED")));
    assert.deepEqual(recorded.map((r) => r.sequence).sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 1));
    for (const r of recorded) assert.equal((JSON.parse(r.body) as { data: { sequence: number } }).data.sequence, r.sequence);
  });

  test("sequences are per order", async () => {
    const partner = await service.createPartner();
    const a = await createOrderFixture(service.pool, partner.id);
    const b = await createOrderFixture(service.pool, partner.id);
    assert.equal((await emit(service, a, "order.created", "PENDING_DEPOSIT")).sequence, 1);
    assert.equal((await emit(service, a, "order.expired", "EXPIRED")).sequence, 2);
    assert.equal((await emit(service, b, "order.created", "PENDING_DEPOSIT")).sequence, 1);
  });
});

describe("outbox transaction", () => {
  test("an event recorded in a rolled-back transaction is never delivered", async () => {
    const { receiver, partner, order } = await setup();
    let rolledBack: { deliveryId: string | null; eventId: string } | undefined;
    await assert.rejects(
      withTransaction(service.pool, async (tx) => {
        rolledBack = await recordEvent(tx, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} }, { boss: service.boss });
        throw new Error("the state change failed");
      }),
      /the state change failed/,
    );
    // A later event of the same order goes through the same queue; once it is delivered, the rolled-back
    // one would have been too.
    const committed = await emit(service, order, "order.expired", "EXPIRED");
    await waitForStatus(partner.apiKey, committed.deliveryId!, "DELIVERED");
    await sleep(1000);
    assert.deepEqual(receiver.requests.map((r) => r.headers["x-webhook-id"]), [committed.deliveryId]);
    assert.equal(committed.sequence, 1, "the rolled-back event's sequence is not used up");
    const stored = await service.pool.query("SELECT 1 FROM webhook_events WHERE id = $1", [rolledBack!.eventId]);
    assert.equal(stored.rowCount, 0);
    assert.deepEqual(await service.boss.findJobs(DELIVERY_QUEUE, { data: { deliveryId: rolledBack!.deliveryId } }), []);
    assert.deepEqual((await deliveriesOf(partner.apiKey)).map((d) => d.id), [committed.deliveryId]);
  });

  test("a partner without a webhook URL gets no delivery, its events are still recorded, and a URL set later gets the events after it", async () => {
    const partner = await service.createPartner();
    const order = await createOrderFixture(service.pool, partner.id);
    const before = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    assert.equal(before.deliveryId, null);
    assert.equal(before.sequence, 1);
    const stored = await service.pool.query("SELECT sequence FROM webhook_events WHERE id = $1", [before.eventId]);
    assert.deepEqual(stored.rows, [{ sequence: 1 }]);

    const receiver = await startReceiver();
    receivers.push(receiver);
    assert.equal((await service.admin("PATCH", `/partners/${partner.id}`, { webhookUrl: receiver.url })).status, 200);
    const afterUrl = await emit(service, order, "order.expired", "EXPIRED");
    await waitForStatus(partner.apiKey, afterUrl.deliveryId!, "DELIVERED");
    assert.deepEqual(receiver.requests.map((r) => JSON.parse(r.rawBody).data.sequence), [2]);
    assert.deepEqual((await deliveriesOf(partner.apiKey)).map((d) => d.id), [afterUrl.deliveryId]);
  });

  test("recordEvent refuses an unknown event type and data that would overwrite orderId, status, partnerUserRef or sequence", async () => {
    const partner = await service.createPartner();
    const order = await createOrderFixture(service.pool, partner.id);
    await assert.rejects(
      withTransaction(service.pool, (tx) => recordEvent(tx, { ...order, eventType: "order.teleported" as "order.created", status: "X", data: {} }, { boss: service.boss })),
      /Unknown webhook event type/,
    );
    await assert.rejects(
      withTransaction(service.pool, (tx) => recordEvent(tx, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: { sequence: 7 } }, { boss: service.boss })),
      /must not set "sequence"/,
    );
  });

  test("recordEvent refuses an order of another partner", async () => {
    const owner = await service.createPartner();
    const other = await service.createPartner();
    const order = await createOrderFixture(service.pool, owner.id);
    await assert.rejects(
      withTransaction(service.pool, (tx) => recordEvent(tx, { ...order, partnerId: other.id, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} }, { boss: service.boss })),
      /does not belong to partner/,
    );
  });
});

describe("secret rotation", () => {
  test("the attempt after a rotation is signed with the new secret", async () => {
    let newSecret = "";
    const partnerRef: { id?: string } = {};
    const { receiver, partner, order } = await setup(async (_request, index) => {
      if (index > 0) return 200;
      // The first attempt fails, and the operator issues a new secret before the retry.
      const rotated = await service.admin<{ webhookSecret: string }>("POST", `/partners/${partnerRef.id}/webhook-secret`);
      newSecret = rotated.body.webhookSecret;
      return 500;
    });
    partnerRef.id = partner.id;
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    const [first, second] = receiver.requests;
    const sig = (secret: string, r: typeof first) => signWebhook(secret, Number(r!.headers["x-webhook-timestamp"]), r!.rawBody);
    assert.match(newSecret, /^whsec_[0-9a-f]{64}$/);
    assert.equal(first!.headers["x-webhook-signature"], sig(partner.webhookSecret, first));
    assert.equal(second!.headers["x-webhook-signature"], sig(newSecret, second));
    assert.notEqual(second!.headers["x-webhook-signature"], sig(partner.webhookSecret, second));
  });
});

describe("redelivery", () => {
  test("an operator redelivery starts a new attempt series with the same id and body", async () => {
    const { receiver, partner, order } = await setup(() => 200);
    const event = await emit(service, order, "order.refunded", "REFUNDED", { refundTxHash: "0xbeef" });
    const first = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");

    const response = await service.admin<DeliveryRecord>("POST", `/deliveries/${event.deliveryId}/redeliver`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.id, event.deliveryId);
    assert.equal(response.body.status, "PENDING");
    assert.equal(response.body.attempts, 0);
    assert.equal(response.body.deliveredAt, null);

    await waitFor("the second request", () => receiver.requests[1]);
    const again = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.equal(again.attempts, 1);
    assert.ok(Date.parse(again.deliveredAt!) > Date.parse(first.deliveredAt!));
    assert.equal(receiver.requests.length, 2);
    assert.equal(receiver.requests[1]!.headers["x-webhook-id"], event.deliveryId);
    assert.equal(receiver.requests[1]!.rawBody, receiver.requests[0]!.rawBody);
  });

  test("a FAILED delivery redelivered to a fixed endpoint is DELIVERED", async () => {
    let healthy = false;
    const { partner, order } = await setup(() => (healthy ? 200 : 500));
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    await waitForStatus(partner.apiKey, event.deliveryId!, "FAILED", 30_000);
    healthy = true;
    assert.equal((await service.admin("POST", `/deliveries/${event.deliveryId}/redeliver`)).status, 200);
    const record = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.equal(record.attempts, 1);
    assert.equal(record.errorMessage, null);
  });

  test("an attempt on the wire when a redelivery starts is logged under its own series, and the new series goes out after it", async () => {
    let answerFirst!: (status: number) => void;
    const firstAnswer = new Promise<number>((resolve) => (answerFirst = resolve));
    const { receiver, partner, order } = await setup((_request, index) => (index === 0 ? firstAnswer : 200));
    const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
    await waitFor("the first attempt on the wire", () => receiver.requests[0]);

    assert.equal((await service.admin("POST", `/deliveries/${event.deliveryId}/redeliver`)).status, 200);
    answerFirst(500);
    const record = await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.equal(record.attempts, 1, "the old series' failure did not count in the new series");
    assert.equal(receiver.requests.length, 2);
    const { rows } = await service.pool.query<{ series: number; attempt: number; response_status: number }>(
      "SELECT series, attempt, response_status FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY series, attempt",
      [event.deliveryId],
    );
    assert.deepEqual(rows, [
      { series: 1, attempt: 1, response_status: 500 },
      { series: 2, attempt: 1, response_status: 200 },
    ]);
  });

  test("redelivering an unknown delivery is NOT_FOUND", async () => {
    const response = await service.admin("POST", "/deliveries/whd_000000000000000000000000/redeliver");
    assert.equal(response.status, 404);
    assert.equal((response.body as { error: string }).error, "NOT_FOUND");
  });
});

describe("stalled deliveries", () => {
  test("a pending delivery whose job was lost is enqueued again by the sweep and delivered", async () => {
    const { receiver, partner, order } = await setup();
    const event = await withTransaction(service.pool, async (tx) => {
      const recorded = await recordEvent(tx, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} }, { boss: service.boss });
      const db = { executeSql: (text: string, values?: unknown[]) => tx.query(text, values) };
      const jobs = await service.boss.findJobs(DELIVERY_QUEUE, { data: { deliveryId: recorded.deliveryId }, db });
      assert.equal(jobs.length, 1);
      await service.boss.deleteJob(DELIVERY_QUEUE, jobs[0]!.id, { db });
      return recorded;
    });
    await sleep(1500);
    assert.equal(receiver.requests.length, 0, "nothing is sent without a job");
    assert.ok((await sweepStalledDeliveries(service.pool, service.boss, 0)) >= 1);
    await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    assert.equal(receiver.requests.length, 1);
  });
});

describe("one attempt at a time", () => {
  test("duplicate jobs for the same attempt make one request: the others find the delivery busy or already done", async () => {
    const { receiver, partner, order } = await setup(async () => {
      await sleep(800);
      return 200;
    });
    const event = await withTransaction(service.pool, async (tx) => {
      const recorded = await recordEvent(tx, { ...order, eventType: "order.created", status: "PENDING_DEPOSIT", data: {} }, { boss: service.boss });
      const job = { deliveryId: recorded.deliveryId!, series: 1, attempt: 1 };
      await enqueueAttempt(service.boss, tx, job);
      await enqueueAttempt(service.boss, tx, job);
      return recorded;
    });
    await waitForStatus(partner.apiKey, event.deliveryId!, "DELIVERED");
    await waitFor("all three jobs finished", async () => {
      const jobs = await service.boss.findJobs(DELIVERY_QUEUE, { data: { deliveryId: event.deliveryId } });
      return jobs.length === 3 && jobs.every((j) => j.state === "completed");
    }, 20_000);
    assert.equal(receiver.requests.length, 1);
    assert.equal((await delivery(partner.apiKey, event.deliveryId!)).attempts, 1);
  });
});
