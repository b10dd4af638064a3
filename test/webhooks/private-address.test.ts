// WEBHOOK_ALLOW_PRIVATE=false (production): webhooks go only to https URLs whose every resolved address
// is public, checked at delivery time on the address actually connected to.
import assert from "node:assert/strict";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import type { DeliveryRecord } from "../../src/webhooks/deliveries.ts";
import { assertError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { createOrderFixture, emit } from "./support/fixtures.ts";
import { sleep, waitFor } from "./support/receiver.ts";

let service: TestService;
let listener: net.Server;
let port: number;
/** Connections that reached the loopback listener: must stay 0. */
let connections = 0;

before(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_PRIVATE: "false", WEBHOOK_RETRY_DELAYS_SECONDS: "1,1,1,1,1", WEBHOOK_TIMEOUT_MS: "1500" });
  listener = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as AddressInfo).port;
});
after(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  await service.close();
});

/**
 * A partner whose URL passed the checks when it was saved (a public name), and whose stored URL now
 * leads inside: as when the name's DNS answer changes after it was saved.
 */
async function firstAttemptTo(url: string): Promise<DeliveryRecord> {
  const partner = await service.createPartner({ webhookUrl: "https://partner.example/hooks" });
  await service.pool.query("UPDATE partners SET webhook_url = $2 WHERE id = $1", [partner.id, url]);
  const order = await createOrderFixture(service.pool, partner.id);
  const event = await emit(service, order, "order.created", "PENDING_DEPOSIT");
  return waitFor("the first attempt", async () => {
    const response = await service.api<{ deliveries: DeliveryRecord[] }>("GET", `/webhooks?orderId=${order.orderId}`, { key: partner.apiKey });
    const record = response.body.deliveries.find((d) => d.id === event.deliveryId);
    return record && record.attempts >= 1 ? record : undefined;
  });
}

test("a host name resolving to a loopback address is blocked at delivery time, and nothing connects to it", async () => {
  const record = await firstAttemptTo(`https://localhost:${port}/hooks`);
  assert.equal(record.status, "PENDING");
  assert.match(record.errorMessage!, /^Blocked: localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/);
  await sleep(1500);
  assert.equal(connections, 0);
});

test("an address literal in a private range is blocked without connecting", async () => {
  const record = await firstAttemptTo(`https://127.0.0.1:${port}/hooks`);
  assert.match(record.errorMessage!, /^Blocked: 127\.0\.0\.1 is a loopback address/);
  assert.equal(connections, 0);
});

test("a plain http URL is blocked", async () => {
  const record = await firstAttemptTo(`http://127.0.0.1:${port}/hooks`);
  assert.match(record.errorMessage!, /^Blocked: the webhook URL must use https/);
  assert.equal(connections, 0);
});

test("a blocked URL is retried on the schedule and ends FAILED like any failing endpoint", async () => {
  const record = await firstAttemptTo(`https://[::1]:${port}/hooks`);
  assert.match(record.errorMessage!, /^Blocked: ::1 is a loopback address/);
  const final = await waitFor("FAILED", async () => {
    const { rows } = await service.pool.query<{ status: string; attempts: number }>("SELECT status, attempts FROM webhook_deliveries WHERE id = $1", [record.id]);
    return rows[0]!.status === "FAILED" ? rows[0] : undefined;
  }, 20_000);
  assert.equal(final.attempts, 5);
  assert.equal(connections, 0);
});

test("saving a webhook URL on a loopback or private address, or over http, is VALIDATION_ERROR", async () => {
  for (const webhookUrl of [`https://127.0.0.1:${port}/hooks`, "https://localhost/hooks", "https://10.0.0.8/hooks", "https://[fd00::1]/hooks", "http://partner.example/hooks"]) {
    const response = await service.admin("POST", "/partners", { name: "P", tier: "FREE", kycModel: "PARTNER_MANAGED", webhookUrl });
    assertError(response, 400, "VALIDATION_ERROR");
  }
});
