import type { Pool } from "../db/pool.ts";
import { InvalidStateError, OrderNotDisputedError, ResolutionPendingError, ValidationError } from "../domain/errors.ts";
import type { RouteGroup } from "../http/routes.ts";
import { pageSchema, pagination } from "../http/schema.ts";
import {
  confirmWindowOpen,
  DISPUTE_OUTCOMES,
  HOLD_DECISIONS,
  lockGraceEndsAt,
  ORDER_STATUSES,
  resolutionHeldBySanctions,
  type DisputeOutcome,
  type HoldDecision,
  type OrderContext,
} from "../orders/machine.ts";
import { getOrderRow } from "../orders/queries.ts";
import { applyOrderEvent, type OrderEffectPorts } from "../orders/store.ts";
import { AML_RISK_LEVELS, REVIEW_QUEUES, adminOrderDetail, listAdminOrders, readReputation, type AdminOrderDeps, type AdminOrderFilters } from "./orders.ts";
import { adminOrderDetailSchema, adminOrderListItemSchema, reputationSchema } from "../orders/order-schema.ts";

export interface AdminOrderRouteDeps extends AdminOrderDeps {
  pool: Pool;
  ports: OrderEffectPorts;
}

const ADDRESS = "^0x[0-9a-fA-F]{40}$";

/** Every partner's orders, one order in full, and dispute resolution (decisions section 12). */
export function adminOrderRoutes(admin: RouteGroup, deps: AdminOrderRouteDeps): void {
  const { pool } = deps;

  admin.add<unknown, AdminOrderFilters>(
    {
      method: "get",
      path: "/orders",
      tag: "Orders",
      summary: "Every partner's orders, newest first, filtered by status, partner, user, AML risk level and review queue",
      description:
        "`review=SANCTIONS_HOLD`: orders whose buyer (its wallet on the sanctions list, or a sanctions or PEP match in its KYC screening) or " +
        "depositing seller wallet is sanctioned; `review=THIRD_PARTY_PAYMENT`: orders paid from an account that is not the buyer's, each with " +
        "`thirdPartyPayment` (the CEP's payer beside the buyer's verified identity, and `releasePossibleUntil`). Both await the operator's " +
        "decision (POST /orders/:id/review).",
      query: {
        type: "object",
        additionalProperties: false,
        properties: {
          status: { enum: ORDER_STATUSES },
          partnerId: { type: "string", minLength: 1, maxLength: 100 },
          partnerUserRef: { type: "string", minLength: 1, maxLength: 255 },
          amlRiskLevel: { enum: AML_RISK_LEVELS },
          review: { enum: REVIEW_QUEUES },
          ...pagination,
        },
      },
      responses: { 200: { description: "{ orders, total, limit, offset, hasMore }; each order is the partner list item plus partnerId, partnerName, amlRiskScore, dispute", schema: pageSchema("orders", adminOrderListItemSchema) } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await listAdminOrders(pool, query);
    },
  );

  admin.add(
    {
      method: "get",
      path: "/orders/:id",
      tag: "Orders",
      summary: "One order: partner detail plus machine snapshot, path through the chart, deliveries, chain transactions, escrow and reputation",
      responses: { 200: { description: "Admin order detail", schema: adminOrderDetailSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      ctx.body = await adminOrderDetail(pool, deps, params.id!);
    },
  );

  admin.add<{ outcome: DisputeOutcome; note?: string | null }>(
    {
      method: "post",
      path: "/orders/:id/resolve",
      tag: "Orders",
      summary: "Resolve a dispute: the arbiter's transaction is sent once, and the order follows the chain",
      description:
        "Only while DISPUTED (else 409 ORDER_NOT_DISPUTED). BUYER and NO_FAULT_RELEASE release to the buyer (COMPLETED), SELLER and " +
        "NO_FAULT_REFUND refund the seller (REFUNDED), NO_FAULT_RETRY returns the order to LOCKED with a new lock window; BUYER costs the " +
        "seller 50 reputation points on chain, SELLER the buyer. The answer is the order as it stands, still DISPUTED with " +
        "`dispute.resolutionRequest` set: the status changes when the indexer sees the transaction. Asking again with the same outcome " +
        "sends nothing more; a different outcome while one is on its way is 409 RESOLUTION_PENDING. While the buyer is held for a " +
        "sanctions review (undecided, or decided REFUND) BUYER and NO_FAULT_RELEASE are 409 INVALID_STATE: nothing is paid to the buyer.",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["outcome"],
        properties: { outcome: { enum: DISPUTE_OUTCOMES }, note: { type: ["string", "null"], maxLength: 2000 } },
      },
      responses: { 200: { description: "Admin order detail", schema: adminOrderDetailSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "ORDER_NOT_DISPUTED", "RESOLUTION_PENDING", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, null, params.id!);
      const note = body.note?.trim() ? body.note.trim() : null;
      const result = await applyOrderEvent(pool, deps.ports, row.id, { type: "RESOLUTION_REQUESTED", outcome: body.outcome, note, at: new Date().toISOString() });
      if (!result.changed && result.status !== "DISPUTED") throw new OrderNotDisputedError(`The order is ${result.status}; only a DISPUTED order can be resolved`);
      const detail = await adminOrderDetail(pool, deps, row.id);
      const pending = detail.dispute?.resolutionRequest;
      if (!result.changed && pending && pending.outcome !== body.outcome) {
        throw new ResolutionPendingError(`A ${pending.outcome} resolution was requested at ${pending.requestedAt} and is on its way to the chain`);
      }
      // The machine refused to pay a buyer whose sanctions hold stands; say why.
      const hold = detail.sanctionsHold;
      if (!result.changed && !pending && resolutionHeldBySanctions({ sanctionsHold: hold }, body.outcome)) {
        throw new InvalidStateError(
          `The buyer's wallet is held for a sanctions review (${hold!.decision === "REFUND" ? "decided REFUND" : "undecided"}): ${body.outcome} would pay the buyer; ` +
            "resolve SELLER, NO_FAULT_REFUND or NO_FAULT_RETRY (then decide the hold with POST /orders/:id/review)",
        );
      }
      ctx.body = detail;
    },
  );

  admin.add<{ decision: HoldDecision; note?: string | null }>(
    {
      method: "post",
      path: "/orders/:id/review",
      tag: "Orders",
      summary: "Decide a hold (sanctions, third-party payment, held deposit): release, or refund",
      description:
        "For an order held for review with no decision yet (else 409 INVALID_STATE): a LOCKED order whose buyer is sanctioned, or whose " +
        "payment came from someone else's account (THIRD_PARTY_PAYMENT); an ACTIVE order whose deposit came from a listed wallet. " +
        "On a lock, RELEASE lifts the hold: a payment already verified is released now (confirmPayment sent once, PENDING_RELEASE), a " +
        "later one as usual; REFUND keeps the release stopped and lets the lock-expiry refund return the USDC to the seller (at once when " +
        "the lock has already expired), and for a third-party payment the seller returns the pesos to their payer. The escrow takes a " +
        "release only until the lock's expiry + REFUND_GRACE_SECONDS (`thirdPartyPayment.releasePossibleUntil`): after it RELEASE of a " +
        "verified payment is 409 INVALID_STATE and only REFUND remains. On a held deposit, RELEASE lists the order and REFUND cancels it " +
        "(the deposit returns to its depositor). A held lock can also be disputed on chain and resolved with POST /orders/:id/resolve.",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["decision"],
        properties: { decision: { enum: HOLD_DECISIONS }, note: { type: ["string", "null"], maxLength: 2000 } },
      },
      responses: { 200: { description: "Admin order detail", schema: adminOrderDetailSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, null, params.id!);
      const note = body.note?.trim() ? body.note.trim() : null;
      const result = await applyOrderEvent(pool, deps.ports, row.id, { type: "HOLD_DECIDED", decision: body.decision, note, at: new Date().toISOString() });
      if (!result.changed) throw new InvalidStateError(await whyNotDecided(row.id, body.decision));
      ctx.body = await adminOrderDetail(pool, deps, row.id);
    },
  );

  /** Why a hold decision changed nothing: already decided, too late to release, or no hold at all. */
  async function whyNotDecided(id: string, decision: HoldDecision): Promise<string> {
    const row = await getOrderRow(pool, null, id);
    const context = (row.machine_snapshot as { context: OrderContext }).context;
    const holds = [context.sanctionsHold, context.thirdPartyHold, context.depositHold].filter((hold) => !!hold);
    const undecided = holds.some((hold) => hold.decision === null);
    if (undecided && row.status === "LOCKED" && decision === "RELEASE" && context.cepHash !== null && !confirmWindowOpen(context, new Date().toISOString())) {
      return `The escrow takes the release only until ${lockGraceEndsAt(context)} (the lock's expiry + the refund grace); decide REFUND`;
    }
    const decided = holds.find((hold) => hold.decision !== null);
    if (!undecided && decided) return `The hold was already decided: ${decided.decision} at ${decided.decidedAt}`;
    return `The order is ${row.status} and not held for review`;
  }

  const schema = deps.indexerSchema;
  if (schema) {
    admin.add(
      {
        method: "get",
        path: "/reputation/:address",
        tag: "Orders",
        summary: "An account's on-chain reputation as indexed (0 until it loses a dispute, -50 per loss)",
        responses: { 200: { description: "{ address, score, updatedBlock, updatedAt }", schema: reputationSchema } },
        errors: ["VALIDATION_ERROR"],
      },
      async (ctx, { params }) => {
        const address = params.address!;
        if (!new RegExp(ADDRESS).test(address)) throw new ValidationError('"address" must be a 0x-prefixed 20-byte hex address');
        ctx.body = await readReputation(pool, schema, address);
      },
    );
  }
}
