// The gas money of the keys that send the service's transactions (decisions 1 and 7): the service signer
// (payment confirmations, refunds) and the arbiter (dispute resolutions). Each balance is read every
// minute; it is low below SIGNER_MIN_BALANCE_ETH, or below what the key spent over the last day at its
// recent rate, whichever is higher. Reported, never enforced: /readyz names a low balance (the instance
// still serves everything else, so it stays ready), the metrics and the operator console show it.
import { Gauge, type Registry } from "prom-client";
import { formatEther, type Address, type PublicClient } from "viem";
import type { Logger } from "../logger.ts";
import { repeatPass } from "../repeating-pass.ts";

/** How often each balance is read. */
export const SIGNER_BALANCE_INTERVAL_MS = 60_000;
/** The window the spending rate is measured over (and extrapolated to a day from). */
const SPENDING_WINDOW_MS = 24 * 3600_000;
const DAY_MS = 24 * 3600_000;

export interface SignerBalance {
  role: "service" | "arbiter";
  address: Address;
  balanceEth: string;
  /** SIGNER_MIN_BALANCE_ETH. */
  minimumEth: string;
  /** What the key spent over the samples of the last day, as a day's worth (0 until two samples). */
  dailySpendEth: string;
  low: boolean;
  /** Why it is low, for people. */
  reason: string | null;
  checkedAt: string;
}

interface Sample {
  at: number;
  wei: bigint;
}

/** Wei spent per day at the rate the samples show: the sum of the balance's falls (top-ups are not spending). */
export function dailySpend(samples: readonly Sample[]): bigint {
  if (samples.length < 2) return 0n;
  let spent = 0n;
  for (let i = 1; i < samples.length; i += 1) {
    const fall = samples[i - 1]!.wei - samples[i]!.wei;
    if (fall > 0n) spent += fall;
  }
  const span = samples[samples.length - 1]!.at - samples[0]!.at;
  return span <= 0 ? 0n : (spent * BigInt(DAY_MS)) / BigInt(span);
}

export interface SignerBalanceWatch {
  /** The last reading of each key; empty before the first (or while the chain cannot be read). */
  current(): SignerBalance[];
  /** Reads every balance now. */
  check(): Promise<SignerBalance[]>;
  stop(): void;
}

export function watchSignerBalances(deps: {
  publicClient: Pick<PublicClient, "getBalance">;
  signers: { role: SignerBalance["role"]; address: Address }[];
  minimumWei: bigint;
  logger: Logger;
  intervalMs?: number;
  now?: () => number;
}): SignerBalanceWatch {
  const now = deps.now ?? Date.now;
  const samples = new Map<Address, Sample[]>();
  let readings: SignerBalance[] = [];

  const check = async (): Promise<SignerBalance[]> => {
    readings = await Promise.all(
      deps.signers.map(async ({ role, address }) => {
        const wei = await deps.publicClient.getBalance({ address });
        const at = now();
        const kept = [...(samples.get(address) ?? []), { at, wei }].filter((sample) => sample.at > at - SPENDING_WINDOW_MS);
        samples.set(address, kept);
        const daily = dailySpend(kept);
        const belowMinimum = wei < deps.minimumWei;
        const belowDay = daily > 0n && wei < daily;
        const reason = belowMinimum
          ? `${formatEther(wei)} ETH is below SIGNER_MIN_BALANCE_ETH (${formatEther(deps.minimumWei)} ETH)`
          : belowDay
            ? `${formatEther(wei)} ETH is less than a day of its recent spending (${formatEther(daily)} ETH a day)`
            : null;
        if (reason) deps.logger.warn({ role, address }, `${role} signer balance low: ${reason}`);
        return { role, address, balanceEth: formatEther(wei), minimumEth: formatEther(deps.minimumWei), dailySpendEth: formatEther(daily), low: reason !== null, reason, checkedAt: new Date(at).toISOString() };
      }),
    );
    return readings;
  };

  const passes = repeatPass(check, {
    firstDelayMs: 0,
    intervalMs: deps.intervalMs ?? SIGNER_BALANCE_INTERVAL_MS,
    onError: (error) => {
      readings = [];
      deps.logger.warn({ err: error }, "signer balances could not be read");
    },
  });
  return { current: () => readings, check, stop: () => void passes.stop() };
}

/** The /readyz line: "ok", "unknown" (not read yet, or unreadable) or what is low. */
export function signerBalanceReadiness(readings: readonly SignerBalance[]): string {
  if (readings.length === 0) return "unknown";
  const low = readings.filter((reading) => reading.low);
  return low.length === 0 ? "ok" : `low: ${low.map((reading) => `${reading.role} ${reading.address} ${reading.reason}`).join("; ")}`;
}

/** Prometheus gauges of the last readings, in the service's registry (served at /metrics). */
export function registerSignerBalanceMetrics(registry: Registry, watch: Pick<SignerBalanceWatch, "current">): void {
  const labelNames = ["role", "address"] as const;
  const gauge = (name: string, help: string, value: (reading: SignerBalance) => number) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const reading of watch.current()) this.set({ role: reading.role, address: reading.address }, value(reading));
      },
    });
  gauge("offramp_signer_balance_eth", "Balance of the key that signs the service's (or the arbiter's) transactions, in ETH", (reading) => Number(reading.balanceEth));
  gauge("offramp_signer_balance_low", "1 when the signer's balance is below SIGNER_MIN_BALANCE_ETH or a day of its recent spending", (reading) => (reading.low ? 1 : 0));
  gauge("offramp_signer_daily_spend_eth", "The signer's spending over the last day, as ETH a day", (reading) => Number(reading.dailySpendEth));
}
