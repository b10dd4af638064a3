// Decisions section 11: a repeat with the same Idempotency-Key and body returns the first response,
// status and body byte for byte (the same keys in the same order). The first body used to be kept as
// JSONB, which stores keys sorted by length, so a replay came back reordered. Each idempotent route is
// called twice and the raw response texts compared, successes and error answers alike.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";
import type { TestService } from "../support/service.ts";

let service: TestService;
let managed: { apiKey: string };
let provided: { apiKey: string };
let sequence = 0;

before(async () => {
  service = await startOfflineOrderService();
  managed = await service.createPartner({ tier: "ENTERPRISE" });
  provided = await service.createPartner({ tier: "ENTERPRISE", kycModel: "SERVICE_PROVIDED" });
});
after(() => service?.close());

interface Raw {
  status: number;
  contentType: string | null;
  text: string;
}

async function rawPost(apiKey: string, path: string, body: unknown, key: string): Promise<Raw> {
  const response = await fetch(`${service.baseUrl}/api/v1${path}`, {
    method: "POST",
    headers: { "X-API-Key": apiKey, "Content-Type": "application/json", "Idempotency-Key": key },
    body: JSON.stringify(body),
  });
  return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() };
}

/** Posts twice with one fresh key; asserts the repeat is the same bytes; returns the parsed first body. */
async function twice(apiKey: string, path: string, body: unknown, expectedStatus: number): Promise<Record<string, unknown>> {
  sequence += 1;
  const key = `bytes-${sequence}-${Date.now()}`;
  const first = await rawPost(apiKey, path, body, key);
  const repeat = await rawPost(apiKey, path, body, key);
  assert.equal(first.status, expectedStatus, first.text);
  assert.equal(repeat.status, first.status);
  assert.equal(repeat.contentType, first.contentType);
  assert.equal(repeat.text, first.text, `POST ${path}: the replay is the first response byte for byte`);
  return JSON.parse(first.text) as Record<string, unknown>;
}

test("every idempotent route replays its first response byte for byte", async () => {
  await twice(managed.apiKey, "/users", { partnerUserRef: "bytes-seller", kycAttestation: { level: "BASIC", verifiedAt: "2026-01-01T00:00:00Z" } }, 201);
  const quote = await twice(managed.apiKey, "/quotes", { type: "SELL", amountUsdc: 25.5, partnerUserRef: "bytes-seller" }, 201);
  const order = await twice(managed.apiKey, "/orders", { quoteId: quote.id, partnerUserRef: "bytes-seller", sellerClabe: SELLER_CLABE }, 201);
  // An error answer is replayed the same way: payment reported on an order that is not LOCKED.
  await twice(managed.apiKey, `/orders/${String(order.id)}/payment`, { trackingKey: "MBAN01002601010000001", operationDate: "2026-01-01", senderBankCode: "40012", amountMxn: 1, signature: `0x${"11".repeat(65)}` }, 409);
  await twice(managed.apiKey, `/orders/${String(order.id)}/cancel`, {}, 200);

  await twice(provided.apiKey, "/users", { partnerUserRef: "bytes-kyc" }, 201);
  await twice(provided.apiKey, "/users/bytes-kyc/kyc", { level: "BASIC", returnUrl: "https://partner.example/kyc/done" }, 201);
});
