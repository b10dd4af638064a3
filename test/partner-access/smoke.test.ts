import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

test("smoke", async () => {
  const partner = await service.createPartner();
  const health = await service.api("GET", "/health", { key: partner.apiKey });
  assert.equal(health.status, 200, JSON.stringify(health.body));
  const rate = await service.api("GET", "/exchange-rate", { key: partner.apiKey });
  assert.equal(rate.status, 200, JSON.stringify(rate.body));
  console.log(rate.body, Object.fromEntries(health.headers));
});
