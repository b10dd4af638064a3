import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { foldOrderCounts } from "../orders/order-counts.ts";
import { repeatPass, type RepeatingPass } from "../repeating-pass.ts";

/**
 * Folds the orders' counter ledger every `intervalMs` (src/orders/order-counts.ts): a busy partner's
 * changes append two rows each, about 1,300 in 5 s at 25 trades a second, which a total then sums.
 * Every instance runs it; one folds at a time.
 */
export function startOrderCountFolding(options: { pool: Pool; logger: Logger; intervalMs: number }): RepeatingPass {
  const { pool, logger, intervalMs } = options;
  return repeatPass(async () => logger.debug({ folded: await foldOrderCounts(pool) }, "order counts folded"), {
    intervalMs,
    onError: (error) => logger.warn({ err: error }, "folding the order counts failed; trying again next interval"),
  });
}
