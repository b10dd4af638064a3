// Decisions section 6 under load: a partner's new orders are created one at a time (its row locked),
// while its other orders change state. Each state change updates the partner's order counts, whose
// foreign key check takes a key-share lock on that same partner row, so the creation's lock must not
// conflict with it: with FOR UPDATE, a creation waiting for a count row that a state change held, and
// that state change waiting for the partner row, deadlocked and POST /orders answered 500 (seen by the
// bench's trade pipelines). Every request here must succeed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ADMIN_TOKEN } from "../support/service.ts";
import { SELLER_CLABE, startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { call, type Client } from "./support.ts";

const USERS = 12;
const ROUNDS = 4;

let stack: TradeStack;
let client: Client;

before(async () => {
  stack = await startTradeStack();
  client = { name: "partner", apiKey: stack.partner.apiKey, adminToken: ADMIN_TOKEN, baseUrl: () => stack.service.baseUrl };
  for (let i = 0; i < USERS; i += 1) assert.equal((await call(client, "POST", "/users", { body: { partnerUserRef: `creator-${i}` } })).status, 201);
});

after(async () => {
  await stack?.close();
});

const newOrder = async (ref: string): Promise<{ status: number; id: string; body: unknown }> => {
  const quote = await call<{ id: string }>(client, "POST", "/quotes", { body: { type: "SELL", amountUsdc: 10, partnerUserRef: ref } });
  assert.equal(quote.status, 201, JSON.stringify(quote.body));
  const order = await call<{ id: string }>(client, "POST", "/orders", { body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE } });
  return { status: order.status, id: order.body.id, body: order.body };
};

test("orders created while the partner's other orders are cancelled all succeed", async () => {
  const failures: string[] = [];
  let previous: string[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    // This round's creations race the cancellation of the last round's orders (PENDING_DEPOSIT -> EXPIRED).
    const [created] = await Promise.all([
      Promise.all(Array.from({ length: USERS }, (_, i) => newOrder(`creator-${i}`))),
      Promise.all(
        previous.map(async (id) => {
          const cancelled = await call(client, "POST", `/orders/${id}/cancel`, {});
          if (cancelled.status !== 200) failures.push(`cancel ${id}: ${cancelled.status} ${JSON.stringify(cancelled.body)}`);
        }),
      ),
    ]);
    for (const order of created) if (order.status !== 201) failures.push(`order: ${order.status} ${JSON.stringify(order.body)}`);
    previous = created.filter((order) => order.status === 201).map((order) => order.id);
  }
  assert.deepEqual(failures, []);
});
