// Ids (decisions section 2: an opaque id with its type's prefix) and an order's escrow id draw their
// random bytes from a pool that is refilled 4 KiB at a time (src/domain/ids.ts). Here: the ids keep their
// shape, and stay distinct across many refills of the pool, whatever sizes are drawn between them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { newId, randomHex } from "../../src/domain/ids.ts";

test("an id is its prefix and 24 lower-case hex digits", () => {
  for (const prefix of ["ord", "qt", "usr", "evt"] as const) assert.match(newId(prefix), new RegExp(`^${prefix}_[0-9a-f]{24}$`));
});

test("ids stay distinct across refills of the pool, with other sizes drawn between them", () => {
  const seen = new Set<string>();
  // 20,000 ids of 12 bytes and as many 32-byte draws: about 156 refills of the 4 KiB pool, each one
  // reached at a different offset.
  for (let i = 0; i < 20_000; i += 1) {
    const id = newId("ord");
    assert.match(id, /^ord_[0-9a-f]{24}$/);
    seen.add(id);
    const escrowOrderId = randomHex(32);
    assert.match(escrowOrderId, /^[0-9a-f]{64}$/);
    seen.add(escrowOrderId);
  }
  assert.equal(seen.size, 40_000);
});

test("the pool's bytes are spread over every hex digit", () => {
  const counts = new Map<string, number>();
  for (let i = 0; i < 2_000; i += 1) for (const digit of randomHex(32)) counts.set(digit, (counts.get(digit) ?? 0) + 1);
  // 128,000 digits: 8,000 expected of each; a pool refilled with zeros or never refilled would not pass.
  assert.equal(counts.size, 16);
  for (const [digit, count] of counts) assert.ok(count > 7_000 && count < 9_000, `digit ${digit} drawn ${count} times`);
});

test("a draw of no bytes, or of more than the pool holds, is refused", () => {
  assert.throws(() => randomHex(0), RangeError);
  assert.throws(() => randomHex(4_097), RangeError);
  assert.throws(() => randomHex(1.5), RangeError);
});
