// The signature and the address rules, as pure functions (no database, no network).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { retryDelaySeconds } from "../../src/workers/webhook-deliveries.ts";
import { signWebhook } from "../../src/webhooks/signature.ts";
import { blockedRange, checkWebhookUrlSyntax } from "../../src/webhooks/url-guard.ts";

describe("signature", () => {
  // Computed once, independently of this code:
  //   printf '%s' "1763744709.$BODY" | openssl dgst -sha256 -hmac "$SECRET" -hex
  const SECRET = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  const TIMESTAMP = 1763744709;
  const BODY =
    '{"event":"order.completed","timestamp":"2026-11-21T17:05:09.123Z","data":{"orderId":"ord_0123456789abcdef01234567",' +
    '"status":"COMPLETED","partnerUserRef":"user-42","sequence":5,"completedAt":"2026-11-21T17:05:09.123Z"}}';

  test("is the lowercase hex HMAC-SHA256 of `timestamp.rawBody` keyed with the whole whsec_ secret (known vector)", () => {
    assert.equal(signWebhook(SECRET, TIMESTAMP, BODY), "62cb34113e46149f733e6df0b3bcc9a0f2b8069df028e5f620907c2bd6caec78");
  });

  test("changes with the timestamp, the body and the secret", () => {
    const reference = signWebhook(SECRET, TIMESTAMP, BODY);
    assert.notEqual(signWebhook(SECRET, TIMESTAMP + 1, BODY), reference);
    assert.notEqual(signWebhook(SECRET, TIMESTAMP, BODY.replace("user-42", "user-43")), reference);
    assert.notEqual(signWebhook(SECRET.slice("whsec_".length), TIMESTAMP, BODY), reference, "the whsec_ prefix is part of the key");
  });
});

describe("retry schedule", () => {
  test("after failure n the next attempt waits the nth delay", () => {
    const delays = [30, 120, 600, 1800, 7200];
    assert.deepEqual([1, 2, 3, 4].map((n) => retryDelaySeconds(delays, n)), [30, 120, 600, 1800]);
  });
});

describe("webhook addresses", () => {
  const blocked: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.254", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:127.0.0.1", "loopback"],
    ["64:ff9b::a00:1", "rfc6052"],
  ];
  for (const [address, range] of blocked) {
    test(`${address} is refused (${range})`, () => assert.equal(blockedRange(address), range));
  }
  for (const address of ["8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111"]) {
    test(`${address} is a public address`, () => assert.equal(blockedRange(address), undefined));
  }

  test("a saved URL must be https unless WEBHOOK_ALLOW_PRIVATE", () => {
    assert.throws(() => checkWebhookUrlSyntax("http://partner.example/hooks", false), /https/);
    assert.doesNotThrow(() => checkWebhookUrlSyntax("https://partner.example/hooks", false));
    assert.doesNotThrow(() => checkWebhookUrlSyntax("http://127.0.0.1:8080/hooks", true));
  });

  test("a saved URL naming a loopback or private address is refused unless WEBHOOK_ALLOW_PRIVATE", () => {
    for (const url of ["https://127.0.0.1/h", "https://[::1]/h", "https://10.0.0.5/h", "https://169.254.169.254/latest", "https://localhost/h", "https://api.localhost/h"]) {
      assert.throws(() => checkWebhookUrlSyntax(url, false), /must not point at/, url);
      assert.doesNotThrow(() => checkWebhookUrlSyntax(url, true), url);
    }
  });
});
