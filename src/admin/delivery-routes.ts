import { operatorAudit } from "../partners/audit.ts";
import type { Pool } from "../db/pool.ts";
import type { PgBoss } from "../jobs/boss.ts";
import type { RouteGroup } from "../http/routes.ts";
import { pageSchema } from "../http/schema.ts";
import { adminDeliveryDetailSchema, adminDeliveryRecordSchema, deliveryFilterProperties, type DeliveryQuery } from "../webhooks/partner-routes.ts";
import { getDeliveryDetail, listAllDeliveries, redeliver } from "../webhooks/deliveries.ts";

/** Operator routes over webhook deliveries (decisions section 12). */
export function adminDeliveryRoutes(admin: RouteGroup, deps: { pool: Pool; boss: PgBoss }): void {
  const { pool, boss } = deps;

  admin.add<unknown, DeliveryQuery & { partnerId?: string }>(
    {
      method: "get",
      path: "/deliveries",
      tag: "Deliveries",
      summary: "Every partner's webhook deliveries, newest first",
      query: {
        type: "object",
        additionalProperties: false,
        properties: { ...deliveryFilterProperties, partnerId: { type: "string", minLength: 1, maxLength: 100 } },
      },
      responses: { 200: { description: "Deliveries, each with partnerId, sequence and series", schema: pageSchema("deliveries", adminDeliveryRecordSchema) } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await listAllDeliveries(pool, query);
    },
  );

  admin.add(
    {
      method: "get",
      path: "/deliveries/:id",
      tag: "Deliveries",
      summary: "One delivery with its payload and every attempt made",
      responses: { 200: { description: "Delivery", schema: adminDeliveryDetailSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      ctx.body = await getDeliveryDetail(pool, params.id!);
    },
  );

  admin.add(
    {
      method: "post",
      path: "/deliveries/:id/redeliver",
      tag: "Deliveries",
      summary: "Send a delivery again: a new attempt series with the same id and body",
      description: "Attempts start over at 0 and the status returns to PENDING; the first attempt of the series is immediate.",
      responses: { 200: { description: "The delivery, reset", schema: adminDeliveryRecordSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      ctx.body = await redeliver(pool, boss, params.id!, { audit: operatorAudit(ctx.ip) });
    },
  );
}
