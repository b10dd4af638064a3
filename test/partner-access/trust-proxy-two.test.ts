// Decisions section 3 and 19: TRUST_PROXY is the number of proxies in front. Behind two, the client's
// address is the second from the right of X-Forwarded-For (the nearest proxy is the connection's peer
// and appends the address the farther one connected from): whatever a client writes to the left of it
// neither passes the IP allow-list nor opens a fresh per-address rate-limit window. The service counts on
// a clock pinned mid-minute: on the wall clock, a burst begun in a minute's last moment was split between
// two windows and its last request answered 401, not 429 (once in CI).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { UNAUTHENTICATED_REQUESTS_PER_MINUTE } from "../../src/domain/tiers.ts";
import { assertError, assertStatus, midMinute } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

const CLIENT = "198.51.100.23";
const LISTED = "203.0.113.7";
/** The farther proxy's address, as the nearer one appends it. */
const OUTER_PROXY = "10.0.0.2";

let service: TestService;
let apiKey: string;

before(async () => {
  const pinned = midMinute();
  service = await startTestService({ TRUST_PROXY: "2" }, { clock: { now: () => pinned } });
  apiKey = (await service.createPartner({ ipAllowList: [LISTED] })).apiKey;
});
after(() => service.close());

const health = (forwardedFor: string, key?: string) => service.api("GET", "/health", { ...(key ? { key } : {}), headers: { "X-Forwarded-For": forwardedFor } });

test("the second address from the right is the client's: a listed client is allowed", async () => {
  assertStatus(await health(`${LISTED}, ${OUTER_PROXY}`, apiKey), 200);
});

test("a listed address written by the client to the left of its own is ignored: 403 IP_NOT_ALLOWED", async () => {
  assertError(await health(`${LISTED}, ${CLIENT}, ${OUTER_PROXY}`, apiKey), 403, "IP_NOT_ALLOWED");
  assertError(await health(`${CLIENT}, ${OUTER_PROXY}`, apiKey), 403, "IP_NOT_ALLOWED");
});

test("changing the leftmost value opens no fresh rate-limit window: the client's address is counted", async () => {
  const answers = [];
  for (let i = 0; i <= UNAUTHENTICATED_REQUESTS_PER_MINUTE; i += 1) answers.push(await health(`192.0.2.${i % 250}, ${CLIENT}, ${OUTER_PROXY}`));
  assert.deepEqual(
    answers.slice(0, UNAUTHENTICATED_REQUESTS_PER_MINUTE).map((answer) => answer.status),
    Array(UNAUTHENTICATED_REQUESTS_PER_MINUTE).fill(401),
  );
  assertError(answers.at(-1)!, 429, "RATE_LIMITED");
  // Another client behind the same proxies has its own window.
  assertError(await health(`198.51.100.24, ${OUTER_PROXY}`), 401, "MISSING_API_KEY");
});
