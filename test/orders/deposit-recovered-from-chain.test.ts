// Decisions 6 and 15: a deposit the escrow accepted in time lists its order even when its event never
// reaches the service (the full chaos run lost two: a reorganisation, a database kill and an indexer
// restart at once). The deposit timer, finding the escrow holding the deposit past the deadline for
// longer than the indexer takes, reads the Deposited log from the chain and applies it as the indexer's
// row would be; the consumer, meeting the same event later, changes nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { placeOrder, startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ DEPOSIT_TIMEOUT_SECONDS: "10" }, {}, { mining: "auto" });
});
after(() => stack?.close());

test("a deposit whose event the service never got is applied from the chain by the deposit timer, once", { timeout: 180_000 }, async () => {
  const consumer = stack.service.chain!.consumer!;
  await consumer.stop(); // the indexer's events stop reaching the service: this deposit's will be "lost"
  const order = await placeOrder(stack);
  const deposit = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  assert.equal(deposit.status, 200, JSON.stringify(deposit.body));

  // Past the deadline and the indexer's grace the timer finds the escrow holding it and applies its log.
  const active = await waitForStatus(stack, order.id, "ACTIVE", 90_000);
  assert.deepEqual(active.timeline.map((entry) => entry.event), ["CREATED", "DEPOSIT_CONFIRMED"]);
  const { rows: applied } = await stack.service.pool.query<{ event_id: string; block_number: string }>(
    "SELECT event_id, block_number FROM applied_chain_events WHERE order_id = $1",
    [order.id],
  );
  assert.equal(applied.length, 1);
  assert.match(applied[0]!.event_id, /^31337-\d+-\d+:0x[0-9a-f]{64}$/, "keyed as the indexer's row of it");

  // The consumer back: it meets the indexer's row of the same event and changes nothing.
  const { rows: indexed } = await stack.service.pool.query<{ id: string; block_hash: string }>(
    `SELECT id, block_hash FROM "${stack.indexerSchema}".escrow_event WHERE event_name = 'Deposited' AND order_id = $1`,
    [order.escrowOrderId.toLowerCase()],
  );
  assert.equal(`${indexed[0]!.id}:${indexed[0]!.block_hash}`, applied[0]!.event_id);
  consumer.start();
  await waitFor("the consumer past the deposit's block", async () => {
    const { rows } = await stack.service.pool.query<{ block_number: string }>("SELECT block_number FROM chain_cursor WHERE name = $1", [stack.indexerSchema]);
    return rows[0] && BigInt(rows[0].block_number) >= BigInt(applied[0]!.block_number) ? true : undefined;
  });
  const after = await waitForStatus(stack, order.id, "ACTIVE");
  assert.deepEqual(after.timeline.map((entry) => entry.event), ["CREATED", "DEPOSIT_CONFIRMED"]);
  const { rows: events } = await stack.service.pool.query<{ event_type: string }>(
    "SELECT event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence",
    [order.id],
  );
  assert.deepEqual(events.map((event) => event.event_type), ["order.created", "order.deposit_confirmed"]);
});
