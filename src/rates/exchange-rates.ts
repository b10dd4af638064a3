import type { Pool } from "../db/pool.ts";
import { prepared, withTransaction } from "../db/pool.ts";
import { RateUnavailableError } from "../domain/errors.ts";
import type { RateProvider } from "../integrations/banxico-sie.ts";
import type { Logger } from "../logger.ts";

export interface ExchangeRate {
  /** The `exchange_rates` row it was read from. */
  id: string;
  usdMxn: string;
  source: "central_bank" | "fallback_provider";
  fetchedAt: Date;
}

/** A rate older than this is never used, even when both providers are down (decisions section 10). */
const LAST_RESORT_AGE_MS = 60 * 60 * 1000;
const REFRESH_LOCK = 7_210_001;

export interface ExchangeRates {
  current(): Promise<ExchangeRate>;
  /**
   * The rate `current()` last returned in this process while it is within its validity, read from memory:
   * a quote made from it checks in its own statement that it is still the latest row (src/quotes/quotes.ts).
   */
  recent(): ExchangeRate | undefined;
}

interface RateRow {
  id: string;
  usd_mxn: string;
  source: ExchangeRate["source"];
  fetched_at: Date;
}

/**
 * The USD/MXN rate: the central bank's FIX first, then the fallback provider, cached in PostgreSQL for
 * `validitySeconds` so every instance shares one cache. One instance refreshes at a time (advisory lock);
 * the others wait and read its result. Each process also keeps the last rate it read (`recent()`), which
 * the quote's insert uses only while it is still the table's latest row.
 */
export function createExchangeRates(pool: Pool, providers: RateProvider[], validitySeconds: number, logger: Logger): ExchangeRates {
  const latest = async (db: Pick<Pool, "query">): Promise<ExchangeRate | undefined> => {
    const { rows } = await db.query<RateRow>(prepared("SELECT id, usd_mxn, source, fetched_at FROM exchange_rates ORDER BY fetched_at DESC, id DESC LIMIT 1", []));
    const row = rows[0];
    return row ? fromRow(row) : undefined;
  };
  const fresh = (rate: ExchangeRate | undefined, maxAgeMs: number): rate is ExchangeRate =>
    rate !== undefined && Date.now() - rate.fetchedAt.getTime() < maxAgeMs;

  /** What `current()` returned last, for `recent()`. */
  let last: ExchangeRate | undefined;
  const readOrRefresh = async (): Promise<ExchangeRate> => {
    const cached = await latest(pool);
    if (fresh(cached, validitySeconds * 1000)) return cached;
    return withTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [REFRESH_LOCK]);
      const again = await latest(client);
      if (fresh(again, validitySeconds * 1000)) return again;
      for (const provider of providers) {
        try {
          const quote = await provider.latest();
          const { rows } = await client.query<RateRow>(
            "INSERT INTO exchange_rates (usd_mxn, source) VALUES ($1, $2) RETURNING id, usd_mxn, source, fetched_at",
            [quote.usdMxn, provider.source],
          );
          return fromRow(rows[0]!);
        } catch (error) {
          logger.warn({ err: error, source: provider.source }, "exchange rate provider unavailable");
        }
      }
      if (fresh(again, LAST_RESORT_AGE_MS)) return again;
      throw new RateUnavailableError("Neither the central bank nor the fallback provider has a rate, and no recent rate is known");
    });
  };
  return {
    async current() {
      last = await readOrRefresh();
      return last;
    },
    recent: () => (fresh(last, validitySeconds * 1000) ? last : undefined),
  };
}

const fromRow = (row: RateRow): ExchangeRate => ({ id: row.id, usdMxn: row.usd_mxn, source: row.source, fetchedAt: row.fetched_at });
