// verifyWebhook (sdk/src/webhooks.ts) against signatures made by the service's own signer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { verifyWebhook, WebhookVerificationError } from "../../sdk/src/index.ts";
import { webhookHeaders } from "../../src/webhooks/signature.ts";

const secret = "whsec_0123456789abcdef";
const body = '{"event":"order.created","timestamp":"2026-11-21T17:05:09.123Z","data":{"orderId":"ord_1","status":"PENDING_DEPOSIT","partnerUserRef":"u1","sequence":1}}';
const signed = (at = new Date(), key = secret, raw = body) => webhookHeaders("whd_1", key, at, raw);
const refused = (reason: string) => (error: unknown) => error instanceof WebhookVerificationError && error.reason === reason && error.status === (reason === "stale" ? 400 : 401);

test("a delivery signed with the secret verifies and gives its event, from a Buffer or a string body", () => {
  const event = verifyWebhook(Buffer.from(body), signed(), secret);
  assert.deepEqual(event, JSON.parse(body));
  assert.deepEqual(verifyWebhook(body, signed(), [secret]), event);
});

test("headers are found whatever their case, in a fetch Headers or in Node's lowercased object", () => {
  const headers = signed();
  const lowercased = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  assert.equal(verifyWebhook(body, new Headers(headers), secret).data.orderId, "ord_1");
  assert.equal(verifyWebhook(body, lowercased, secret).data.orderId, "ord_1");
});

test("after a rotation either accepted secret verifies", () => {
  assert.equal(verifyWebhook(body, signed(new Date(), "whsec_new"), [secret, "whsec_new"]).event, "order.created");
});

test("a timestamp more than 300 s away, or none, is stale (400)", () => {
  const now = Date.now();
  assert.throws(() => verifyWebhook(body, signed(new Date(now - 301_000)), secret), refused("stale"));
  assert.throws(() => verifyWebhook(body, signed(new Date(now + 301_000)), secret), refused("stale"));
  const { "X-Webhook-Timestamp": _, ...noTimestamp } = signed();
  assert.throws(() => verifyWebhook(body, noTimestamp, secret), refused("stale"));
  assert.equal(verifyWebhook(body, signed(new Date(now - 290_000)), secret).data.sequence, 1);
});

test("a changed body, a re-serialized body, another secret or no signature is a bad signature (401)", () => {
  assert.throws(() => verifyWebhook(body.replace("ord_1", "ord_2"), signed(), secret), refused("bad-signature"));
  assert.throws(() => verifyWebhook(JSON.stringify(JSON.parse(body), null, 2), signed(), secret), refused("bad-signature"));
  assert.throws(() => verifyWebhook(body, signed(new Date(), "whsec_other"), secret), refused("bad-signature"));
  const { "X-Webhook-Signature": _, ...unsigned } = signed();
  assert.throws(() => verifyWebhook(body, unsigned, secret), refused("bad-signature"));
});
