// The receiver shown to partners in docs/webhooks.md (docs/examples/webhook-receiver.ts), run against
// real deliveries of the service, so the example cannot drift from what the service sends.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import type http from "node:http";
import { after, before, test } from "node:test";
import { createWebhookReceiver, type WebhookEvent } from "../../docs/examples/webhook-receiver.ts";
import type { DeliveryRecord } from "../../src/webhooks/deliveries.ts";
import { signWebhook } from "../../src/webhooks/signature.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { createOrderFixture, emit, type OrderFixture } from "./support/fixtures.ts";
import { waitFor } from "./support/receiver.ts";

let service: TestService;
let partner: { id: string; apiKey: string; webhookSecret: string };
let order: OrderFixture;
let server: http.Server;
let url: string;
/** The secrets the example receiver accepts, changed by the tests. */
const accepted: string[] = [];
const received: { event: WebhookEvent; deliveryId: string }[] = [];

before(async () => {
  service = await startTestService({ WEBHOOK_RETRY_DELAYS_SECONDS: "1,1,1,1,1" });
  partner = await service.createPartner();
  accepted.push(partner.webhookSecret);
  server = createWebhookReceiver({ secrets: accepted, onEvent: (event, deliveryId) => void received.push({ event, deliveryId }) });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  assert.equal((await service.admin("PATCH", `/partners/${partner.id}`, { webhookUrl: url })).status, 200);
  order = await createOrderFixture(service.pool, partner.id);
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await service.close();
});

async function record(id: string): Promise<DeliveryRecord> {
  const response = await service.api<{ deliveries: DeliveryRecord[] }>("GET", "/webhooks?limit=100", { key: partner.apiKey });
  return response.body.deliveries.find((d) => d.id === id)!;
}

function post(body: string, headers: Record<string, string>): Promise<number> {
  return fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body }).then((r) => r.status);
}

test("the example receiver accepts a real delivery with 200 and hands the event to the application", async () => {
  const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
  await waitFor("the event processed", () => received.find((r) => r.deliveryId === event.deliveryId));
  const got = received.find((r) => r.deliveryId === event.deliveryId)!;
  assert.deepEqual(got.event, JSON.parse(event.body));
  const delivery = await waitFor("DELIVERED", async () => ((await record(event.deliveryId!)).status === "DELIVERED" ? record(event.deliveryId!) : undefined));
  assert.equal(delivery.attempts, 1);
});

test("after a secret rotation it answers 401 until it accepts the new secret, and the retried delivery then succeeds", async () => {
  const rotated = await service.admin<{ webhookSecret: string }>("POST", `/partners/${partner.id}/webhook-secret`);
  const event = await emit(service, order, "order.expired", "EXPIRED");
  const refused = await waitFor("a refused attempt", async () => {
    const current = await record(event.deliveryId!);
    return current.attempts >= 1 ? current : undefined;
  });
  assert.equal(refused.status, "PENDING");
  assert.equal(refused.errorMessage, "HTTP 401");
  accepted.push(rotated.body.webhookSecret);
  await waitFor("DELIVERED", async () => (await record(event.deliveryId!)).status === "DELIVERED");
  assert.ok(received.some((r) => r.deliveryId === event.deliveryId));
});

test("it answers 400 to a timestamp more than 300 seconds away, even when correctly signed", async () => {
  const body = JSON.stringify({ event: "order.created", timestamp: new Date().toISOString(), data: {} });
  const now = Math.floor(Date.now() / 1000);
  // 310, not 301: the receiver reads its own clock a request later, and a second boundary crossed in between
  // made 301 s ahead exactly 300 to it (a clean-clone CI run answered 200).
  for (const timestamp of [now - 310, now + 310]) {
    const status = await post(body, { "X-Webhook-Id": "whd_x", "X-Webhook-Timestamp": String(timestamp), "X-Webhook-Signature": signWebhook(accepted[0]!, timestamp, body) });
    assert.equal(status, 400, `timestamp ${timestamp - now} s from now`);
  }
  assert.equal(await post(body, { "X-Webhook-Id": "whd_x", "X-Webhook-Signature": signWebhook(accepted[0]!, now, body) }), 400, "no timestamp");
  assert.equal(await post(body, { "X-Webhook-Id": "whd_x", "X-Webhook-Timestamp": String(now - 290), "X-Webhook-Signature": signWebhook(accepted[0]!, now - 290, body) }), 200);
});

test("it answers 401 to a body changed after signing, a missing signature, or a re-serialized body", async () => {
  const body = '{"event":"order.created","timestamp":"2026-11-21T17:05:09.123Z","data":{"orderId":"ord_1","status":"PENDING_DEPOSIT"}}';
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = signWebhook(accepted[0]!, timestamp, body);
  const headers = { "X-Webhook-Id": "whd_y", "X-Webhook-Timestamp": String(timestamp) };
  assert.equal(await post(body.replace("ord_1", "ord_2"), { ...headers, "X-Webhook-Signature": signature }), 401);
  assert.equal(await post(body, headers), 401);
  assert.equal(await post(JSON.stringify(JSON.parse(body), null, 2), { ...headers, "X-Webhook-Signature": signature }), 401);
  assert.equal(await post(body, { ...headers, "X-Webhook-Signature": signature }), 200);
});

test("docs/webhooks.md shows the tested receiver verbatim", async () => {
  const doc = await readFile(new URL("../../docs/webhooks.md", import.meta.url), "utf8");
  const example = await readFile(new URL("../../docs/examples/webhook-receiver.ts", import.meta.url), "utf8");
  assert.ok(doc.includes("```ts\n" + example + "```"), "the README's receiver block is docs/examples/webhook-receiver.ts");
});

test("the README shows the tested receiver's verification verbatim", async () => {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const example = await readFile(new URL("../../docs/examples/webhook-receiver.ts", import.meta.url), "utf8");
  const region = /\/\/ #region verify\n([\s\S]*?)\/\/ #endregion verify/.exec(example)?.[1];
  assert.ok(region, "docs/examples/webhook-receiver.ts marks its verification with #region verify");
  assert.ok(readme.includes(region), "README.md shows the verification of docs/examples/webhook-receiver.ts as it is");
});
