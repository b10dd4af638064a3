import { insertBulkOrders, type StatusShare } from "../../bench/lib/bulk.ts";
import type { TestService } from "./service.ts";
import { placeOrder, startOfflineOrderService } from "./trade-stack.ts";

/**
 * An offline order service whose database holds 20,000 orders of one ENTERPRISE partner in the shape
 * POST /orders writes (copies of one placed order, bench/lib/bulk.ts), their statuses in `mix`, then
 * ANALYZEd: what a query plan sees on a grown orders table.
 */
export async function startServiceWithBulkOrders(options: { partnerName: string; tag: string; mix: readonly StatusShare[] }): Promise<TestService> {
  const service = await startOfflineOrderService();
  const partner = await service.createPartner({ name: options.partnerName, tier: "ENTERPRISE" });
  const template = await placeOrder({ service, partner });
  await insertBulkOrders(service.pool, { partnerId: partner.id, templateOrderId: template.id, count: 20_000, users: 400, tag: options.tag, mix: [...options.mix], spreadHours: 48 });
  await service.pool.query("ANALYZE orders");
  return service;
}
