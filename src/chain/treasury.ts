import type { Address } from "viem";
import type { Logger } from "../logger.ts";
import { repeatPass } from "../repeating-pass.ts";

/** How often the escrow's treasury is read again. */
export const TREASURY_REFRESH_MS = 30_000;
/** How soon a failed read is tried again while no address is known yet. */
const UNKNOWN_RETRY_MS = 5_000;

export interface TreasuryWatch {
  /** The last address read, or undefined before the first read succeeded. */
  current(): Address | undefined;
  stop(): void;
}

/**
 * The escrow's treasury address, which order creation names as the fee recipient of a partner without a
 * fee wallet (decisions 5), read from the chain at start and every 30 s, so an order's transaction takes
 * it from memory and never waits on the chain. A `setTreasury` reaches new orders' terms within that
 * interval (what the previous treasury was credited stays its own to withdraw).
 */
export function watchTreasury(deps: { read: () => Promise<Address>; logger: Logger; refreshMs?: number; retryMs?: number }): TreasuryWatch {
  let known: Address | undefined;
  const refresh = async () => {
    const address = await deps.read();
    if (known !== undefined && known !== address) deps.logger.info({ previous: known, treasury: address }, "escrow treasury changed");
    known = address;
  };
  const passes = repeatPass(refresh, {
    firstDelayMs: 0,
    intervalMs: () => (known === undefined ? (deps.retryMs ?? UNKNOWN_RETRY_MS) : (deps.refreshMs ?? TREASURY_REFRESH_MS)),
    onError: (error) => deps.logger.warn({ err: error }, "escrow treasury could not be read"),
  });
  // A read in flight touches no pool: a shutdown need not wait for it.
  return { current: () => known, stop: () => void passes.stop() };
}
