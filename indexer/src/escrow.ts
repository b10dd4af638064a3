// Indexing functions of the escrow: every event is recorded as one escrow_event row (what the service's
// sync consumes in chain order), and order and reputation events also update the escrow_order and
// reputation views the admin API shows. Ponder runs these in chain order and undoes their writes when
// a block leaves the canonical chain.
import { ponder } from "ponder:registry";
import type { Context } from "ponder:registry";
import { escrowEvent, escrowOrder, indexerHead, reputation } from "ponder:schema";
import { replaceBigInts } from "ponder";
import type { Hex } from "viem";

/** The fields of a decoded log event every handler uses (shared by all event kinds). */
interface LogEvent {
  args: unknown;
  log: { logIndex: number; address: Hex };
  block: { number: bigint; hash: Hex; timestamp: bigint };
  transaction: { hash: Hex; transactionIndex: number };
}

type Db = Context["db"];

/**
 * Inserts the escrow_event row of one log. Inserts here skip a row already stored: when a block's commit
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

/** Applies a change to an existing escrow_order row, stamping the block. */
async function updateOrder(
  db: Db,
  orderId: Hex,
  event: LogEvent,
  change: Partial<typeof escrowOrder.$inferInsert>,
): Promise<void> {
  await db
    .update(escrowOrder, { orderId: orderId.toLowerCase() as Hex })
    .set({ ...change, updatedBlock: event.block.number, updatedAt: event.block.timestamp });
}

ponder.on("OfframpEscrow:Deposited", async ({ event, context }) => {
  await record("Deposited", event, context);
  const { args } = event;
  await context.db.insert(escrowOrder).values({
    orderId: args.orderId.toLowerCase() as Hex,
    status: "Active",
    seller: args.seller,
    token: args.token,
    amount: args.amount,
    feeBps: args.feeBps,
    feeRecipient: args.feeRecipient,
    treasuryShareBps: args.treasuryShareBps,
    listingExpiresAt: args.listingExpiresAt,
    lockWindow: args.lockWindow,
    depositedBlock: event.block.number,
    depositTransactionHash: event.transaction.hash,
    updatedBlock: event.block.number,
    updatedAt: event.block.timestamp,
  }).onConflictDoNothing(); // see record()
});

ponder.on("OfframpEscrow:Locked", async ({ event, context }) => {
  await record("Locked", event, context);
  await updateOrder(context.db, event.args.orderId, event, {
    status: "Locked",
    buyer: event.args.buyer,
    lockExpiresAt: event.args.lockExpiresAt,
  });
});

ponder.on("OfframpEscrow:Released", async ({ event, context }) => {
  await record("Released", event, context);
  const { args } = event;
  await updateOrder(context.db, args.orderId, event, {
    status: "Released",
    buyer: args.buyer,
    buyerAmount: args.buyerAmount,
    feeAmount: args.feeAmount,
    treasuryAmount: args.treasuryAmount,
    cepHash: args.cepHash,
  });
});

ponder.on("OfframpEscrow:Refunded", async ({ event, context }) => {
  await record("Refunded", event, context);
  await updateOrder(context.db, event.args.orderId, event, { status: "Refunded", refundReason: event.args.reason });
});

ponder.on("OfframpEscrow:DisputeOpened", async ({ event, context }) => {
  await record("DisputeOpened", event, context);
  await updateOrder(context.db, event.args.orderId, event, {
    status: "Disputed",
    disputeOpenedBy: event.args.openedBy,
  });
});

ponder.on("OfframpEscrow:DisputeResolved", async ({ event, context }) => {
  await record("DisputeResolved", event, context);
  const { args } = event;
  // NO_FAULT_RETRY (newLockExpiresAt != 0) puts the order back to Locked; every other outcome is
  // followed in the same transaction by Released or Refunded, which set the final status.
  await updateOrder(
    context.db,
    args.orderId,
    event,
    args.newLockExpiresAt === 0n
      ? { disputeOutcome: args.outcome }
      : { disputeOutcome: args.outcome, status: "Locked", lockExpiresAt: args.newLockExpiresAt },
  );
});

ponder.on("OfframpEscrow:ReputationChanged", async ({ event, context }) => {
  await record("ReputationChanged", event, context);
  const values = {
    score: event.args.newScore,
    updatedBlock: event.block.number,
    updatedAt: event.block.timestamp,
  };
  await context.db
    .insert(reputation)
    .values({ account: event.args.account, ...values })
    .onConflictDoUpdate(values);
});

// Events that only go to escrow_event.
ponder.on("OfframpEscrow:TokenAllowed", async ({ event, context }) => record("TokenAllowed", event, context));
ponder.on("OfframpEscrow:TreasuryUpdated", async ({ event, context }) => record("TreasuryUpdated", event, context));
ponder.on("OfframpEscrow:Paused", async ({ event, context }) => record("Paused", event, context));
ponder.on("OfframpEscrow:Unpaused", async ({ event, context }) => record("Unpaused", event, context));
// The pause that just ended moved every open lock's effective expiry by `duration` (lockExpiryOf).
ponder.on("OfframpEscrow:LockClockResumed", async ({ event, context }) =>
  record("LockClockResumed", event, context),
);
// Pull payments: fee shares credited at release (see Released) are withdrawn by their owners.
ponder.on("OfframpEscrow:Withdrawn", async ({ event, context }) => record("Withdrawn", event, context));
ponder.on("OfframpEscrow:TokensRecovered", async ({ event, context }) =>
  record("TokensRecovered", event, context),
);
ponder.on("OfframpEscrow:RoleGranted", async ({ event, context }) => record("RoleGranted", event, context));
ponder.on("OfframpEscrow:RoleRevoked", async ({ event, context }) => record("RoleRevoked", event, context));
ponder.on("OfframpEscrow:RoleAdminChanged", async ({ event, context }) =>
  record("RoleAdminChanged", event, context),
);
ponder.on("OfframpEscrow:EIP712DomainChanged", async ({ event, context }) =>
  record("EIP712DomainChanged", event, context),
);

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
