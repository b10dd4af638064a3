// Concurrency on one key: many requests at once on one quote and on one Idempotency-Key, checked for
// the single outcome the spec promises (decisions 11 and 15): one order per quote, one first answer per key.
import type { Violation } from "./checks.ts";
import { parseJson } from "./checks.ts";
import type { Fixtures } from "./fixtures.ts";
import { SELLER_CLABE } from "./fixtures.ts";
import type { RawRequest, RawResponse, Sender } from "./http.ts";
import type { Rng } from "./rng.ts";
import type { Snapshotter } from "./snapshot.ts";

export interface ScenarioRun {
  name: string;
  requests: RawRequest[];
  responses: RawResponse[];
  violations: Violation[];
}

type Scenario = (context: { sender: Sender; fixtures: Fixtures; rng: Rng; db: Snapshotter | undefined; prefix: string; spoof: boolean }) => Promise<ScenarioRun>;

function post(prefix: string, path: string, key: string, body: unknown, idempotencyKey?: string, spoof?: string): RawRequest {
  const headers: Record<string, string> = { "X-API-Key": key, "Content-Type": "application/json" };
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  if (spoof) headers["X-Forwarded-For"] = spoof;
  return { method: "POST", path: `${prefix}${path}`, headers, body: Buffer.from(JSON.stringify(body)) };
}

const codeOf = (response: RawResponse) => (parseJson(response.body) as { error?: string } | undefined)?.error;
const tally = (responses: RawResponse[]) => responses.map((r) => `${r.status}${codeOf(r) ? ` ${codeOf(r)}` : ""}`).join(", ");

async function freshQuote(sender: Sender, prefix: string, key: string, ref: string): Promise<string | undefined> {
  const response = await sender.send(post(prefix, "/quotes", key, { type: "SELL", amountUsdc: 1, partnerUserRef: ref }));
  return response.status === 201 ? (parseJson(response.body) as { id: string }).id : undefined;
}

const oneQuoteManyOrders: Scenario = async ({ sender, fixtures, rng, db, prefix }) => {
  const { main } = fixtures.partners;
  const ref = rng.pick(main.refs);
  const quoteId = await freshQuote(sender, prefix, main.apiKey, ref);
  const name = "one quote, 8 orders at once (4 without key, 4 with their own keys)";
  if (!quoteId) return { name, requests: [], responses: [], violations: [{ kind: "concurrency", detail: `${name}: could not create the quote` }] };
  const requests = Array.from({ length: 8 }, (_, i) => post(prefix, "/orders", main.apiKey, { quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }, i < 4 ? undefined : `fz-${rng.hex(16)}`));
  const responses = await Promise.all(requests.map((r) => sender.send(r)));
  const violations: Violation[] = [];
  const created = responses.filter((r) => r.status === 201).length;
  const refusedRight = responses.filter((r) => r.status === 409 && codeOf(r) === "QUOTE_USED").length;
  if (created !== 1 || refusedRight !== 7) violations.push({ kind: "concurrency", detail: `${name}: expected one 201 and seven 409 QUOTE_USED, got ${tally(responses)}` });
  if (db) {
    const [row] = await db.query<{ n: string }>("SELECT count(*) AS n FROM orders WHERE quote_id = $1", [quoteId]);
    if (Number(row!.n) !== 1) violations.push({ kind: "concurrency", detail: `${name}: ${row!.n} orders stored for quote ${quoteId}` });
  }
  return { name, requests, responses, violations };
};

const oneKeyOneOrder: Scenario = async ({ sender, fixtures, rng, db, prefix }) => {
  const { main } = fixtures.partners;
  const ref = rng.pick(main.refs);
  const quoteId = await freshQuote(sender, prefix, main.apiKey, ref);
  const name = "one Idempotency-Key, the same order request 6 times at once";
  if (!quoteId) return { name, requests: [], responses: [], violations: [{ kind: "concurrency", detail: `${name}: could not create the quote` }] };
  const key = `fz-${rng.hex(16)}`;
  const requests = Array.from({ length: 6 }, () => post(prefix, "/orders", main.apiKey, { quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }, key));
  const responses = await Promise.all(requests.map((r) => sender.send(r)));
  const violations: Violation[] = [];
  const first = responses[0]!;
  if (first.status !== 201 || responses.some((r) => r.status !== first.status || !r.body.equals(first.body))) {
    violations.push({ kind: "concurrency", detail: `${name}: expected six identical 201 answers, got ${tally(responses)}` });
  }
  if (db) {
    const [row] = await db.query<{ n: string }>("SELECT count(*) AS n FROM orders WHERE quote_id = $1", [quoteId]);
    if (Number(row!.n) !== 1) violations.push({ kind: "concurrency", detail: `${name}: ${row!.n} orders stored for quote ${quoteId}` });
  }
  return { name, requests, responses, violations };
};

const oneKeySameUser: Scenario = async ({ sender, fixtures, rng, db, prefix, spoof }) => {
  const { main } = fixtures.partners;
  const ref = `fz-same-${rng.hex(10)}`;
  const key = `fz-${rng.hex(16)}`;
  const name = "one Idempotency-Key, the same user request 6 times at once";
  const requests = Array.from({ length: 6 }, () => post(prefix, "/users", main.apiKey, { partnerUserRef: ref }, key, spoof ? "10.9.9.9" : undefined));
  const responses = await Promise.all(requests.map((r) => sender.send(r)));
  const violations: Violation[] = [];
  const first = responses[0]!;
  if (first.status !== 201 || responses.some((r) => r.status !== first.status || !r.body.equals(first.body))) {
    violations.push({ kind: "concurrency", detail: `${name}: expected six identical 201 answers, got ${tally(responses)}` });
  }
  if (db) {
    const [row] = await db.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1 AND partner_user_ref = $2", [main.id, ref]);
    if (Number(row!.n) !== 1) violations.push({ kind: "concurrency", detail: `${name}: ${row!.n} users stored` });
  }
  return { name, requests, responses, violations };
};

const oneKeyDifferentUsers: Scenario = async ({ sender, fixtures, rng, db, prefix }) => {
  const { main } = fixtures.partners;
  const key = `fz-${rng.hex(16)}`;
  const refs = Array.from({ length: 6 }, () => `fz-diff-${rng.hex(10)}`);
  const name = "one Idempotency-Key, 6 different user requests at once";
  const requests = refs.map((ref) => post(prefix, "/users", main.apiKey, { partnerUserRef: ref }, key));
  const responses = await Promise.all(requests.map((r) => sender.send(r)));
  const violations: Violation[] = [];
  const created = responses.filter((r) => r.status === 201).length;
  const reused = responses.filter((r) => r.status === 409 && codeOf(r) === "IDEMPOTENCY_KEY_REUSED").length;
  if (created !== 1 || reused !== 5) violations.push({ kind: "concurrency", detail: `${name}: expected one 201 and five 409 IDEMPOTENCY_KEY_REUSED, got ${tally(responses)}` });
  if (db) {
    const [row] = await db.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE partner_id = $1 AND partner_user_ref = ANY($2)", [main.id, refs]);
    if (Number(row!.n) !== 1) violations.push({ kind: "concurrency", detail: `${name}: ${row!.n} of the users stored, expected 1` });
  }
  return { name, requests, responses, violations };
};

export const SCENARIOS: Scenario[] = [oneQuoteManyOrders, oneKeyOneOrder, oneKeySameUser, oneKeyDifferentUsers];
