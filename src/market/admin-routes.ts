import type { Pool } from "../db/pool.ts";
import { NotFoundError } from "../domain/errors.ts";
import type { RouteGroup } from "../http/routes.ts";
import { pageSchema, pagination } from "../http/schema.ts";
import { buyerViewSchema } from "./market-schema.ts";
import { buyerStanding, buyerView, findBuyer, listBuyers, setBuyerStatus, type BuyerPolicy } from "./buyers.ts";
import { readReputations } from "./order-book.ts";
import { pageOf } from "../db/filters.ts";

/** `GET /admin/v1/buyers` and `PATCH /admin/v1/buyers/:wallet` (decisions 17): operators list, suspend and reinstate buyers. */
export function adminBuyerRoutes(admin: RouteGroup, deps: { pool: Pool; policy: BuyerPolicy; indexerSchema: string | undefined }): void {
  const { pool, policy } = deps;

  admin.add<unknown, { limit: number; offset: number }>(
    {
      method: "get",
      path: "/buyers",
      tag: "Buyers",
      summary: "Market buyers, newest first, with their standing (status, locks, expired locks, reputation)",
      query: { type: "object", additionalProperties: false, properties: { ...pagination } },
      responses: { 200: { description: "{ buyers, total, limit, offset, hasMore }", schema: pageSchema("buyers", buyerViewSchema) } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      const { rows, total } = await listBuyers(pool, query);
      const reputations = await readReputations(pool, deps.indexerSchema, rows.map((row) => row.wallet));
      const buyers = await Promise.all(rows.map(async (row) => buyerView(row, await buyerStanding(pool, policy, row), reputations.get(row.wallet) ?? 0)));
      ctx.body = pageOf("buyers", buyers, total, query);
    },
  );

  admin.add<{ status: "ACTIVE" | "SUSPENDED" }>(
    {
      method: "patch",
      path: "/buyers/:wallet",
      tag: "Buyers",
      summary: "Reinstate (ACTIVE: lock expiries until now are forgiven) or suspend (SUSPENDED: 7 days) a buyer",
      description: "The wallet is matched without regard to letter case.",
      body: { type: "object", additionalProperties: false, required: ["status"], properties: { status: { enum: ["ACTIVE", "SUSPENDED"] } } },
      responses: { 200: { description: "The buyer", schema: buyerViewSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { body, params }) => {
      const wallet = params.wallet!;
      if (!/^0x[0-9a-fA-F]{40}$/.test(wallet) || !(await findBuyer(pool, wallet))) throw new NotFoundError(`No buyer with wallet ${wallet}`);
      const row = await setBuyerStatus(pool, wallet, body.status);
      const reputations = await readReputations(pool, deps.indexerSchema, [row.wallet]);
      ctx.body = buyerView(row, await buyerStanding(pool, policy, row), reputations.get(row.wallet) ?? 0);
    },
  );
}
