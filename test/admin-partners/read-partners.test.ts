import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// GET /admin/v1/partners and /partners/:id show partners, never keys or secrets (decisions section 12).
let service: TestService;
const created: { id: string; apiKey: string; webhookSecret: string }[] = [];

before(async () => {
  service = await startTestService();
  for (let i = 1; i <= 3; i += 1) created.push(await service.createPartner({ name: `Listed ${i}`, tier: "FREE" }));
});
after(() => service.close());

function assertNoSecrets(text: string): void {
  for (const partner of created) {
    assert.ok(!text.includes(partner.apiKey.slice(13)), "the API key shows");
    assert.ok(!text.includes(partner.webhookSecret.slice(6)), "the webhook secret shows");
  }
  assert.ok(!/"(apiKey|webhookSecret|apiKeyHash)"/.test(text), "a secret field shows");
}

test("GET /partners lists partners without any key or secret", async () => {
  const response = await service.admin<{ partners: { id: string }[] }>("GET", "/partners");
  assertStatus(response, 200);
  const ids = response.body.partners.map((partner) => partner.id);
  for (const partner of created) assert.ok(ids.includes(partner.id));
  assertNoSecrets(JSON.stringify(response.body));
});

test("GET /partners/:id shows the partner without any key or secret", async () => {
  const response = await service.admin("GET", `/partners/${created[0]!.id}`);
  assertStatus(response, 200);
  assert.equal(response.body.id, created[0]!.id);
  assert.equal(response.body.name, "Listed 1");
  assert.equal(response.body.tier, "FREE");
  assertNoSecrets(JSON.stringify(response.body));
});

test("GET /partners pages with limit and offset, newest first, and tells the total", async () => {
  const firstPage = await service.admin<{ partners: { id: string }[]; total: number; limit: number; offset: number; hasMore: boolean }>("GET", "/partners?limit=2&offset=0");
  assertStatus(firstPage, 200);
  assert.equal(firstPage.body.total, 3);
  assert.equal(firstPage.body.limit, 2);
  assert.equal(firstPage.body.offset, 0);
  assert.equal(firstPage.body.hasMore, true);
  assert.deepEqual(firstPage.body.partners.map((partner) => partner.id), [created[2]!.id, created[1]!.id]);
  const secondPage = await service.admin<{ partners: { id: string }[]; hasMore: boolean }>("GET", "/partners?limit=2&offset=2");
  assert.deepEqual(secondPage.body.partners.map((partner) => partner.id), [created[0]!.id]);
  assert.equal(secondPage.body.hasMore, false);
});

test("a page size above 100 answers VALIDATION_ERROR", async () => {
  assertError(await service.admin("GET", "/partners?limit=101"), 400, "VALIDATION_ERROR");
});

test("an unknown partner id answers 404 NOT_FOUND", async () => {
  assertError(await service.admin("GET", "/partners/ptn_000000000000000000000000"), 404, "NOT_FOUND");
});
