// A whole trade through the partner SDK alone (decisions section 20): user, quote, order, the sandbox's
// deposit, lock and payment, completion, and every webhook received and checked with verifyWebhook.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createOfframpClient, verifyWebhook, type WebhookEvent } from "../../sdk/src/index.ts";
import { SELLER_CLABE, startTradeStack, waitFor, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
let receiver: http.Server;
/** Deliveries as received: the event when verifyWebhook accepted it, else why not. */
const received: { id: string; event?: WebhookEvent; refused?: string }[] = [];

before(async () => {
  stack = await startTradeStack();
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const id = String(req.headers["x-webhook-id"]);
      try {
        received.push({ id, event: verifyWebhook(Buffer.concat(chunks), req.headers, [stack.partner.webhookSecret]) });
        res.writeHead(200).end();
      } catch (error) {
        received.push({ id, refused: (error as Error).message });
        res.writeHead(401).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
  // The operator's set-up (admin API), not the partner's: where the partner's webhooks go.
  assert.equal((await stack.service.admin("PATCH", `/partners/${stack.partner.id}`, { webhookUrl })).status, 200);
});
after(async () => {
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  await stack?.close();
});

test("a whole trade through the SDK: user, quote, order, deposit, lock, payment, COMPLETED, five verified webhooks", async () => {
  const started = Date.now();
  const offramp = createOfframpClient({ baseUrl: stack.service.baseUrl, apiKey: stack.partner.apiKey });
  const ref = `sdk-user-${Date.now().toString(36)}`;

  await offramp.createUser({ partnerUserRef: ref });
  const quote = await offramp.createQuote({ type: "SELL", amountUsdc: 50, partnerUserRef: ref });
  // The document marks no response field required, so the types leave them optional.
  const order = await offramp.createOrder({ quoteId: quote.id!, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
  assert.equal(order.status, "PENDING_DEPOSIT");
  await offramp.sandbox.deposit(order.id);
  await offramp.waitForOrder(order.id, "ACTIVE", { intervalMs: 100 });
  await offramp.sandbox.lock(order.id);
  await offramp.waitForOrder(order.id, "LOCKED", { intervalMs: 100 });
  await offramp.sandbox.pay(order.id);
  const completed = await offramp.waitForOrder(order.id, "COMPLETED", { intervalMs: 100 });
  assert.ok(completed.releaseTxHash);

  const expected = ["order.created", "order.deposit_confirmed", "order.locked", "order.payment_verified", "order.completed"];
  await waitFor("the five webhooks", async () => (received.filter((r) => r.event?.data.orderId === order.id).length >= expected.length ? true : undefined), 30_000);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  assert.deepEqual(received.filter((r) => r.refused), [], "every delivery passed verifyWebhook");
  const events = received.filter((r) => r.event?.data.orderId === order.id).map((r) => r.event!);
  assert.deepEqual(events.map((event) => [event.event, event.data.sequence]), expected.map((name, i) => [name, i + 1]));

  // The list routes through the SDK's iterators: the order, and its five deliveries, delivered.
  const listed: string[] = [];
  for await (const item of offramp.orders({ partnerUserRef: ref })) listed.push(item.id as string);
  assert.deepEqual(listed, [order.id]);
  const webhooksAt = Date.now();
  const delivered = await waitFor("every delivery recorded as DELIVERED", async () => {
    const page = await offramp.listWebhooks({ orderId: order.id });
    return page.deliveries?.length === expected.length && page.deliveries.every((delivery) => delivery.status === "DELIVERED") ? page.deliveries : undefined;
  });
  const recordedSeconds = ((Date.now() - webhooksAt) / 1000).toFixed(1);
  const walked = [];
  for await (const delivery of offramp.webhooks({ orderId: order.id, limit: 2 })) walked.push(delivery.id);
  assert.deepEqual(walked, delivered.map((delivery) => delivery.id), "three pages of two, newest first");
  assert.deepEqual(new Set(walked), new Set(received.filter((r) => r.event?.data.orderId === order.id).map((r) => r.id)));

  console.log(`# trade through the SDK: ${seconds} s from POST /users to the order.completed webhook; webhooks: ${events.map((event) => `#${event.data.sequence} ${event.event} (${event.data.status})`).join(", ")}; all five DELIVERED in GET /webhooks ${recordedSeconds} s later`);
});
