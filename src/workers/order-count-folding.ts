import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { foldOrderCounts } from "../orders/order-counts.ts";

/**
 * Folds the orders' counter ledger every `intervalMs` (src/orders/order-counts.ts): a busy partner's
 * changes append two rows each, about 1,300 in 5 s at 25 trades a second, which a total then sums.
 * Every instance runs it; one folds at a time.
 */
export function startOrderCountFolding(options: { pool: Pool; logger: Logger; intervalMs: number }): { stop(): Promise<void> } {
  const { pool, logger, intervalMs } = options;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      pass = foldOrderCounts(pool)
        .then((folded) => logger.debug({ folded }, "order counts folded"))
        .catch((error: unknown) => logger.warn({ err: error }, "folding the order counts failed; trying again next interval"))
        .finally(() => {
          pass = undefined;
          if (timer) schedule();
        });
    }, intervalMs);
  };
  schedule();
  return {
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await pass;
    },
  };
}
