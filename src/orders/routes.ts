import type { Pool, Queryable } from "../db/pool.ts";
import { OrderNotCancellableError } from "../domain/errors.ts";
import { createOrder, type OrderCreationDeps } from "./create-order.ts";
import { ORDER_STATUSES, type OrderStatus } from "./machine.ts";
import { getOrderRow, getOrderWithTimeline, listOrderRows, orderCreateView, orderDetailView, orderListItem, type OrderViewContext } from "./queries.ts";
import { applyOrderEvent, type OrderEffectPorts } from "./store.ts";
import { currentPartner, type AppContext } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { pageSchema, pagination } from "../http/schema.ts";
import { orderCreateSchema, orderDetailSchema, orderListItemSchema } from "./order-schema.ts";
import { pageOf } from "../db/filters.ts";

export interface OrderRouteDeps {
  pool: Pool;
  ports: OrderEffectPorts;
  creation: OrderCreationDeps;
  view: OrderViewContext;
}

export async function orderDetail(deps: { pool: Queryable; view: OrderViewContext }, partnerId: string | null, orderId: string) {
  const { row, timeline } = await getOrderWithTimeline(deps.pool, partnerId, orderId);
  return orderDetailView(row, timeline, deps.view);
}

export type OrderListQuery = { status?: OrderStatus; partnerUserRef?: string; limit: number; offset: number };

/** The filters of a partner's order list (GET /orders, and the dashboard's). */
export const orderPageSchema = pageSchema("orders", orderListItemSchema);

export const orderListQuery = {
  type: "object",
  additionalProperties: false,
  properties: { status: { enum: ORDER_STATUSES }, partnerUserRef: { type: "string", minLength: 1, maxLength: 255 }, ...pagination },
} as const;

/** One page of the partner's orders, newest first, as GET /orders shows them. */
export async function partnerOrderPage(pool: Pool, partnerId: string, query: OrderListQuery) {
  const { rows, total } = await listOrderRows(pool, { partnerId, ...query });
  return pageOf("orders", rows.map(orderListItem), total, query);
}

export function orderRoutes(api: RouteGroup, deps: OrderRouteDeps): void {
  const { pool } = deps;

  api.add<{ quoteId: string; partnerUserRef: string; sellerClabe: string }>(
    {
      method: "post",
      path: "/orders",
      tag: "Orders",
      summary: "Create an escrow order from a quote",
      description:
        "Checks, in order: VALIDATION_ERROR, INVALID_CLABE, INVALID_QUOTE, QUOTE_USER_MISMATCH, NOT_FOUND, QUOTE_USED, QUOTE_EXPIRED, " +
        "USER_SANCTIONED, KYC_REQUIRED, VOLUME_LIMIT_EXCEEDED. The response's `deposit` holds the service-signed terms the seller's wallet submits.",
      idempotent: true,
      body: {
        type: "object",
        additionalProperties: false,
        required: ["quoteId", "partnerUserRef", "sellerClabe"],
        properties: {
          quoteId: { type: "string", minLength: 1, maxLength: 100 },
          partnerUserRef: { type: "string", minLength: 1, maxLength: 255 },
          sellerClabe: { type: "string", maxLength: 64 },
        },
      },
      responses: { 201: { description: "Order in PENDING_DEPOSIT", schema: orderCreateSchema } },
      errors: ["VALIDATION_ERROR", "INVALID_CLABE", "INVALID_QUOTE", "QUOTE_USER_MISMATCH", "NOT_FOUND", "QUOTE_USED", "QUOTE_EXPIRED", "USER_SANCTIONED", "KYC_REQUIRED", "VOLUME_LIMIT_EXCEEDED", "CHAIN_UNAVAILABLE"],
    },
    async (ctx, { body }) => {
      const partner = currentPartner(ctx);
      const order = await createOrder(deps.creation, partner, body);
      ctx.status = 201;
      ctx.body = orderCreateView(order, deps.view);
    },
  );

  api.add<unknown, { status?: OrderStatus; partnerUserRef?: string; limit: number; offset: number }>(
    {
      method: "get",
      path: "/orders",
      tag: "Orders",
      summary: "The partner's orders, newest first",
      query: orderListQuery,
      responses: { 200: { description: "Page of orders", schema: orderPageSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await partnerOrderPage(pool, currentPartner(ctx).id, query);
    },
  );

  api.add(
    { method: "get", path: "/orders/:id", tag: "Orders", summary: "One order with its timeline", responses: { 200: { description: "Order detail", schema: orderDetailSchema } }, errors: ["NOT_FOUND"] },
    async (ctx, { params }) => {
      ctx.body = await orderDetail(deps, currentPartner(ctx).id, params.id!);
    },
  );

  api.add(
    {
      method: "post",
      path: "/orders/:id/cancel",
      tag: "Orders",
      summary: "Cancel an order",
      description: "PENDING_DEPOSIT: the order ends EXPIRED. ACTIVE: the escrow is refunded on chain and the order ends REFUNDED once the refund is seen. Otherwise ORDER_NOT_CANCELLABLE.",
      idempotent: true,
      responses: { 200: { description: "Order detail", schema: orderDetailSchema } },
      errors: ["NOT_FOUND", "ORDER_NOT_CANCELLABLE"],
    },
    async (ctx: AppContext, { params }) => {
      const partnerId = currentPartner(ctx).id;
      const row = await getOrderRow(pool, partnerId, params.id!);
      const result = await applyOrderEvent(pool, deps.ports, row.id, { type: "CANCEL", at: new Date().toISOString() });
      const detail = await orderDetail(deps, partnerId, row.id);
      const cancelling = detail.timeline.some((entry) => entry.event === "CANCELLATION_REQUESTED");
      if (!result.changed && !cancelling) throw new OrderNotCancellableError(`An order in ${result.status} cannot be cancelled`);
      ctx.body = detail;
    },
  );
}
