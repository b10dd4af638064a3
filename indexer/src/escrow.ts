// Indexing functions of the escrow: every event is recorded as one escrow_event row, which the service's
// sync consumes in chain order and from which the admin API reads an order's escrow and an account's
// reputation (src/sync/indexer-tables.ts). Ponder runs these in chain order, the blocks that reach it
// together in one transaction when following the chain (patched), and undoes their writes when a block leaves
// the canonical chain. Each table written costs every block its own statements (its rows, their
// reorganisation log, its checkpoint): with an escrow_order and a reputation table kept beside the events, a
// block took 13.8 ms to index instead of 7.4 under figure 5's load, and the indexer, one block after
// another, bounded the trades.
import { ponder } from "ponder:registry";
import type { Context } from "ponder:registry";
import { escrowEvent, indexerHead } from "ponder:schema";
import { replaceBigInts } from "ponder";
import type { Hex } from "viem";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";

/** The fields of a decoded log event every handler uses (shared by all event kinds). */
interface LogEvent {
  args: unknown;
  log: { logIndex: number; address: Hex };
  block: { number: bigint; hash: Hex; timestamp: bigint };
  transaction: { hash: Hex; transactionIndex: number };
}

/**
 * Inserts the escrow_event row of one log. The insert skips a row already stored: when a block's commit
 * ran in PostgreSQL but its answer was lost (PostgreSQL killed at that moment), Ponder runs the block's
 * handlers again, and a plain insert would then fail at its flush and stop the indexer.
 */
async function record(eventName: string, event: LogEvent, context: Context): Promise<void> {
  const args =
    event.args !== null && typeof event.args === "object" && !Array.isArray(event.args)
      ? (replaceBigInts(event.args as Record<string, unknown>, (value) => value.toString()) as Record<string, unknown>)
      : {};
  const orderId = typeof args.orderId === "string" ? (args.orderId.toLowerCase() as Hex) : null;
  await context.db.insert(escrowEvent).values({
    id: `${context.chain.id}-${event.block.number}-${event.log.logIndex}`,
    chainId: context.chain.id,
    blockNumber: event.block.number,
    blockHash: event.block.hash,
    blockTimestamp: event.block.timestamp,
    transactionHash: event.transaction.hash,
    transactionIndex: event.transaction.transactionIndex,
    logIndex: event.log.logIndex,
    address: event.log.address,
    eventName,
    orderId,
    args,
  }).onConflictDoNothing();
}

/**
 * Every event the escrow's ABI declares, each recorded as it is: the order events, reputation, roles,
 * pauses (LockClockResumed: the pause that ended moved every open lock's effective expiry), the treasury
 * and pull payments (Withdrawn: fee shares credited at release, withdrawn by their owners).
 */
type EscrowEventName = Extract<(typeof escrowAbi)[number], { type: "event" }>["name"];
const ESCROW_EVENTS = escrowAbi.flatMap((item) => (item.type === "event" ? [item.name] : [])) as EscrowEventName[];
for (const name of ESCROW_EVENTS) ponder.on(`OfframpEscrow:${name}`, async ({ event, context }) => record(name, event, context));

// The head marker (ponder.config.ts `blocks.IndexerHead`): runs once per block, in that block's
// transaction.
ponder.on("IndexerHead:block", async ({ event, context }) => {
  const values = {
    blockNumber: event.block.number,
    blockHash: event.block.hash,
    blockTimestamp: event.block.timestamp,
  };
  await context.db
    .insert(indexerHead)
    .values({ chainId: context.chain.id, ...values })
    .onConflictDoUpdate(values);
});
