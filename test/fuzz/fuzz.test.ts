import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createFixtures, fixtureClient } from "../../src/cli/fuzz/fixtures.ts";
import { runFuzz, violationTotal, type FuzzResult } from "../../src/cli/fuzz/run.ts";
import { startFuzzStack, type FuzzStack } from "../../src/cli/fuzz/stack.ts";
import { allTargets } from "../../src/cli/fuzz/targets.ts";

// The short run of `npm run fuzz` (decisions 15): about a thousand generated requests with a fixed seed,
// valid and broken, against the whole stack (partner API, admin, market, dashboard); no 5xx, the error shape everywhere, nothing reached
// without credentials or across tenants, and no data changed by a refused request.
const SEED = 20261121;
const REQUESTS = 1_000;

let stack: FuzzStack;
let result: FuzzResult;

before(async () => {
  stack = await startFuzzStack(() => undefined);
  const tag = `t${Date.now().toString(36)}`;
  const client = fixtureClient(stack.baseUrl, stack.adminToken);
  const fixtures = await createFixtures(client, { tag, webhookUrl: stack.webhookUrl, log: () => undefined });
  result = await runFuzz({
    baseUrl: stack.baseUrl,
    targets: await allTargets(stack.baseUrl, client, fixtures, { adminToken: stack.adminToken, tag }),
    fixtures,
    databaseUrl: stack.databaseUrl,
    seed: SEED,
    requests: REQUESTS,
    spoofClientAddress: true,
  });
});
after(() => stack?.close());

function listed(kinds: string[]): string {
  return result.violations
    .filter((v) => kinds.includes(v.kind))
    .map((v) => `${v.kind} ${v.count}x ${v.operation} [${v.category}]: ${v.detail}${v.request ? `\n  ${v.request}` : ""}${v.body ? `\n  -> ${v.body}` : ""}`)
    .join("\n");
}

test(`the short fuzz run sends at least ${REQUESTS} requests from the partner, admin, market and dashboard documents`, () => {
  assert.ok(result.requests >= REQUESTS, `${result.requests} requests`);
  assert.deepEqual(result.documents.map((d) => d.target), ["partner", "admin", "market", "dashboard"]);
  for (const target of ["partner", "admin", "market", "dashboard"]) assert.ok((result.byTarget[target] ?? 0) >= 50, `${target}: ${result.byTarget[target] ?? 0} requests`);
  assert.ok(result.batches.checked > 0, "some batches were checked for changed data");
  // The refusals of batches with an accepted write are checked too, sent again on their own.
  assert.ok(result.batches.withAcceptedWrites === 0 || result.batches.refusalsRechecked > 0, JSON.stringify(result.batches));
  assert.ok(result.batches.refusalsUnchecked <= result.batches.refusalsRechecked / 10, `too many refusals left unchecked: ${JSON.stringify(result.batches)}`);
  console.log(`fuzz data check: ${JSON.stringify(result.batches)}`);
});

test("no 5xx and no request without an answer", () => {
  assert.equal(result.fiveXx + (result.violationCounts["no response"] ?? 0), 0, listed(["5xx", "no response"]));
});

test("every error answer is { error, message } with a code of the spec at its status, and carries X-Request-Id", () => {
  assert.equal(result.shapeViolations, 0, listed(["error shape", "unknown error code", "status does not match code", "missing X-Request-Id", "missing rate-limit headers"]));
});

test("nothing answers 2xx without valid credentials, across tenants, or to input that must be refused", () => {
  const kinds = ["auth bypass", "cross-tenant access", "cross-tenant leak", "invalid input accepted"];
  assert.equal(kinds.reduce((sum, kind) => sum + (result.violationCounts[kind as keyof typeof result.violationCounts] ?? 0), 0), 0, listed(kinds));
});

test("no data changed by a refused request, and one outcome per quote and per Idempotency-Key under concurrency", () => {
  assert.equal(result.dataChanges + (result.violationCounts.concurrency ?? 0), 0, listed(["data changed by refused request", "concurrency"]));
});

test("no violation of any kind", () => {
  assert.equal(violationTotal(result), 0, result.violations.map((v) => `${v.kind}: ${v.operation}`).join("\n"));
});
