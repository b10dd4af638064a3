import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { CONCURRENT_HASHES, hashPassword, MAX_WAITING_HASHES, verifyAgainstNothing, verifyPassword } from "../../src/dashboard/credentials.ts";

// Password hashing (scrypt, 32 MiB each) is bounded: a burst of sign-ins waits in line for one of
// CONCURRENT_HASHES slots instead of taking all of libuv's thread pool (and 32 MiB per attempt at once),
// so file reads, DNS lookups and other crypto are not held up behind it.

test("a burst of password hashes leaves the thread pool free: a file read started after 8 hashes ends before the first of them", async () => {
  assert.ok(CONCURRENT_HASHES < 4, "fewer hashes at once than libuv's default 4 threads");
  let hashesDone = 0;
  const burst = Array.from({ length: 8 }, (_, i) => hashPassword(`burst password ${i}`).then(() => (hashesDone += 1)));
  await readFile(new URL(import.meta.url));
  const doneWhenRead = hashesDone;
  await Promise.all(burst);
  assert.equal(doneWhenRead, 0, `the read waited for ${doneWhenRead} hashes`);
});

test("hashes waiting in line still verify: every one of a burst matches its own password only", async () => {
  const passwords = Array.from({ length: 6 }, (_, i) => `line password ${i}`);
  const hashes = await Promise.all(passwords.map((password) => hashPassword(password)));
  const checks = await Promise.all(hashes.flatMap((hash, i) => [verifyPassword(passwords[i]!, hash), verifyPassword(passwords[(i + 1) % 6]!, hash)]));
  assert.deepEqual(checks, passwords.flatMap(() => [true, false]));
});

test(`past ${MAX_WAITING_HASHES} hashes waiting, another is refused at once with 429 RATE_LIMITED (Retry-After 1), not queued`, async () => {
  const queued = Array.from({ length: CONCURRENT_HASHES + MAX_WAITING_HASHES }, (_, i) => hashPassword(`queued password ${i}`));
  const started = performance.now();
  const refused = await hashPassword("one too many").then(
    () => undefined,
    (error: unknown) => error as { code?: string; status?: number; headers?: Record<string, string> },
  );
  const waitedMs = performance.now() - started;
  assert.equal(refused?.status, 429);
  assert.equal(refused?.code, "RATE_LIMITED");
  assert.deepEqual(refused?.headers, { "Retry-After": "1" });
  assert.ok(waitedMs < 50, `refused after ${Math.round(waitedMs)} ms`);
  await Promise.all(queued);
  assert.match(await hashPassword("room again"), /^scrypt\$/);
});

test("an unknown email refused while the line is full is answered as usual once the line drains", async () => {
  const queued = Array.from({ length: CONCURRENT_HASHES + MAX_WAITING_HASHES }, (_, i) => hashPassword(`filler password ${i}`));
  await assert.rejects(verifyAgainstNothing("any password at all"), { code: "RATE_LIMITED" });
  await Promise.all(queued);
  assert.equal(await verifyAgainstNothing("any password at all"), false);
});
