import assert from "node:assert/strict";
import { test } from "node:test";
import { findParticipantByClabePrefix, findParticipantByCode, participants } from "../../src/domain/spei-participants.ts";

test("catalogue entries are well-formed and unique", () => {
  assert.ok(participants.length >= 100, `only ${participants.length} participants`);
  const prefixes = new Set<string>();
  const codes = new Set<string>();
  for (const p of participants) {
    assert.match(p.clabePrefix, /^\d{3}$/);
    assert.match(p.code, /^(\d{5}|2001)$/);
    assert.ok(p.code === "2001" || p.code.endsWith(p.clabePrefix), `${p.code} does not end with ${p.clabePrefix}`);
    assert.ok(p.name.trim().length > 0);
    assert.ok(!prefixes.has(p.clabePrefix), `duplicate prefix ${p.clabePrefix}`);
    assert.ok(!codes.has(p.code), `duplicate code ${p.code}`);
    prefixes.add(p.clabePrefix);
    codes.add(p.code);
  }
});

test("lookups by CLABE prefix and by participant code", () => {
  assert.deepEqual(
    { code: findParticipantByClabePrefix("012")?.code, name: findParticipantByClabePrefix("012")?.name },
    { code: "40012", name: "BBVA MEXICO" },
  );
  assert.equal(findParticipantByClabePrefix("646")?.code, "90646");
  assert.equal(findParticipantByClabePrefix("002")?.name, "BANAMEX");
  assert.equal(findParticipantByClabePrefix("166")?.code, "37166");
  assert.equal(findParticipantByClabePrefix("722")?.code, "90722");
  assert.equal(findParticipantByCode("40014")?.clabePrefix, "014");
  assert.equal(findParticipantByCode("90723")?.name, "CUENCA");
  assert.equal(findParticipantByCode("2001")?.clabePrefix, "001");
  assert.equal(findParticipantByClabePrefix("999"), undefined);
  assert.equal(findParticipantByCode("40999"), undefined);
});

test("the catalogue cannot be altered by callers", () => {
  assert.throws(() => {
    (participants as unknown as { name: string }[])[0]!.name = "X";
  });
});
