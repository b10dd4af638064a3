// Decisions 6, 7 and 15: the service's orders follow the chain even when the indexer's events do not reach
// it (the full chaos run lost two deposits between Ponder and the consumer). The reconciliation reads the
// escrow's logs from the chain each interval and applies what the service has not, keyed as the indexer's
// rows, so the consumer meeting the same events later changes nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { completedTrade } from "../support/trade-paths.ts";
import { startTradeStack, waitFor, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack({ CHAIN_RECONCILE_INTERVAL_SECONDS: "1" });
});
after(() => stack?.close());

async function recorded(orderId: string) {
  const { rows: timeline } = await stack.service.pool.query<{ event: string }>("SELECT event FROM order_timeline WHERE order_id = $1 ORDER BY seq", [orderId]);
  const { rows: webhooks } = await stack.service.pool.query<{ event_type: string }>("SELECT event_type FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [orderId]);
  const { rows: applied } = await stack.service.pool.query<{ event_id: string; event_name: string; block_number: string }>(
    "SELECT event_id, event_name, block_number FROM applied_chain_events WHERE order_id = $1 ORDER BY block_number",
    [orderId],
  );
  return { timeline: timeline.map((row) => row.event), webhooks: webhooks.map((row) => row.event_type), applied };
}

test("with the indexer's events kept from the service, a whole trade follows the chain, each step once", { timeout: 240_000 }, async () => {
  const consumer = stack.service.chain!.consumer!;
  await consumer.stop(); // nothing the indexer holds reaches the orders now
  const done = await completedTrade(stack, 60_000);
  const found = await recorded(done.id);
  assert.deepEqual(found.applied.map((event) => event.event_name), ["Deposited", "Locked", "Released"]);
  for (const event of found.applied) assert.match(event.event_id, /^31337-\d+-\d+:0x[0-9a-f]{64}$/, "keyed as the indexer's row of it");
  for (const step of ["DEPOSIT_CONFIRMED", "LOCKED", "COMPLETED"]) assert.equal(found.timeline.filter((event) => event === step).length, 1, step);
  assert.equal(new Set(found.webhooks).size, found.webhooks.length, `each webhook event once: ${found.webhooks.join(", ")}`);
  assert.ok(stack.service.chain!.reconciliation!.recovered() >= 3);

  // The consumer back: it meets the indexer's rows of the same events and changes nothing.
  const { rows: indexed } = await stack.service.pool.query<{ key: string }>(
    `SELECT id || ':' || block_hash AS key FROM "${stack.indexerSchema}".escrow_event WHERE order_id = $1 ORDER BY block_number, log_index`,
    [done.escrowOrderId.toLowerCase()],
  );
  assert.deepEqual(indexed.map((row) => row.key), found.applied.map((event) => event.event_id));
  consumer.start();
  await waitFor("the consumer past the release's block", async () => {
    const { rows } = await stack.service.pool.query<{ block_number: string }>("SELECT block_number FROM chain_cursor WHERE name = $1", [stack.indexerSchema]);
    return rows[0] && BigInt(rows[0].block_number) >= BigInt(found.applied.at(-1)!.block_number) ? true : undefined;
  });
  await waitForStatus(stack, done.id, "COMPLETED");
  assert.deepEqual(await recorded(done.id), found);
});
