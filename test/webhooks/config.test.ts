// WEBHOOK_CONCURRENCY_PER_ENDPOINT: read and validated once with the rest of the configuration.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, loadConfig } from "../../src/config.ts";

test("attempts in flight per partner endpoint default to 16", () => {
  assert.equal(loadConfig({}).webhookConcurrencyPerEndpoint, 16);
  assert.equal(loadConfig({ WEBHOOK_CONCURRENCY_PER_ENDPOINT: "4" }).webhookConcurrencyPerEndpoint, 4);
});

test("a per-endpoint cap that is not a whole number from 1 to 1000 stops start-up, naming the variable", () => {
  for (const value of ["0", "-3", "2.5", "1001", "many"]) {
    assert.throws(() => loadConfig({ WEBHOOK_CONCURRENCY_PER_ENDPOINT: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /WEBHOOK_CONCURRENCY_PER_ENDPOINT/);
      return true;
    });
  }
});
