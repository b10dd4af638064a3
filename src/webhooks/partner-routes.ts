import type { Pool } from "../db/pool.ts";
import { DELIVERY_STATUSES, listPartnerDeliveries, type DeliveryStatus } from "./deliveries.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import { isoTimestamp, pagination, pageSchema } from "../http/schema.ts";

const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;

/** The spec's webhook delivery record. */
export const deliveryRecordSchema = {
  type: "object",
  required: ["id", "orderId", "eventType", "status", "attempts", "maxAttempts", "lastAttemptAt", "nextAttemptAt", "deliveredAt", "errorMessage", "createdAt"],
  properties: {
    id: { type: "string" },
    orderId: { type: "string" },
    eventType: { type: "string" },
    status: { enum: DELIVERY_STATUSES },
    attempts: { type: "integer" },
    maxAttempts: { type: "integer" },
    lastAttemptAt: nullableTimestamp,
    nextAttemptAt: nullableTimestamp,
    deliveredAt: nullableTimestamp,
    errorMessage: { type: ["string", "null"] },
    createdAt: isoTimestamp,
  },
} as const;

/** Filters shared by the partner and admin listings. */
export const deliveryFilterProperties = {
  status: { enum: DELIVERY_STATUSES },
  orderId: { type: "string", minLength: 1, maxLength: 100 },
  eventType: { type: "string", minLength: 1, maxLength: 100 },
  ...pagination,
} as const;

export interface DeliveryQuery {
  status?: DeliveryStatus;
  orderId?: string;
  eventType?: string;
  limit: number;
  offset: number;
}

/** The delivery list's filters, page and errors: `GET /webhooks` and the dashboard's delivery log serve the same list. */
export const deliveryListSpec = {
  query: { type: "object", additionalProperties: false, properties: deliveryFilterProperties },
  responses: { 200: { description: "Deliveries", schema: pageSchema("deliveries", deliveryRecordSchema) } },
  errors: ["VALIDATION_ERROR"],
};

/** `GET /webhooks`: the partner's own delivery history. */
export function partnerWebhookRoutes(api: RouteGroup, deps: { pool: Pool }): void {
  const { pool } = deps;
  api.add<unknown, DeliveryQuery>(
    {
      method: "get",
      path: "/webhooks",
      tag: "Webhooks",
      summary: "Delivery history of the partner's webhooks, newest first",
      description:
        "Every event sent to the partner's webhook URL, with its attempts. `X-Webhook-Id` of a request is the delivery `id`. " +
        "A delivery is attempted at most 5 times; `nextAttemptAt` is when the next attempt is due while it is PENDING.",
      ...deliveryListSpec,
    },
    async (ctx, { query }) => {
      ctx.body = await listPartnerDeliveries(pool, currentPartner(ctx).id, query);
    },
  );
}
