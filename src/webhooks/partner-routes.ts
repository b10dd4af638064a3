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

/** The admin's delivery record: the partner's, with whose it is and its place in the order's sequence. */
export const adminDeliveryRecordSchema = {
  ...deliveryRecordSchema,
  required: [...deliveryRecordSchema.required, "partnerId", "sequence", "series"],
  properties: { ...deliveryRecordSchema.properties, partnerId: { type: "string" }, sequence: { type: "integer" }, series: { type: "integer" } },
} as const;

/** The admin's delivery detail: the record, the payload exactly as sent, and every attempt. */
export const adminDeliveryDetailSchema = {
  ...adminDeliveryRecordSchema,
  required: [...adminDeliveryRecordSchema.required, "body", "attemptLog"],
  properties: {
    ...adminDeliveryRecordSchema.properties,
    body: { type: "string" },
    attemptLog: {
      type: "array",
      items: {
        type: "object",
        required: ["series", "attempt", "startedAt", "finishedAt", "url", "responseStatus", "errorMessage"],
        properties: {
          series: { type: "integer" },
          attempt: { type: "integer" },
          startedAt: isoTimestamp,
          finishedAt: isoTimestamp,
          url: { type: ["string", "null"] },
          responseStatus: { type: ["integer", "null"] },
          errorMessage: { type: ["string", "null"] },
        },
      },
    },
  },
} as const;

/** The dashboard's delivery detail: the partner's record, the payload, and each attempt's status code, duration and error. */
export const memberDeliveryDetailSchema = {
  ...deliveryRecordSchema,
  required: [...deliveryRecordSchema.required, "body"],
  properties: {
    ...deliveryRecordSchema.properties,
    body: { type: "string" },
    attempts: {
      type: "array",
      items: {
        type: "object",
        required: ["series", "attempt", "startedAt", "durationMs", "statusCode", "error"],
        properties: {
          series: { type: "integer" },
          attempt: { type: "integer" },
          startedAt: isoTimestamp,
          durationMs: { type: "integer" },
          statusCode: { type: ["integer", "null"] },
          error: { type: ["string", "null"] },
        },
      },
    },
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
