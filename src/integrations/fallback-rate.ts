import { RateProviderError, type RateProvider } from "./banxico-sie.ts";

// Fallback: Frankfurter, a public market-data API of reference rates, no key.
// Protocol: GET {base}/latest?base=USD&symbols=MXN -> `{ amount: 1, base: "USD", date: "YYYY-MM-DD", rates: { MXN: 17.2537 } }`.

interface FrankfurterResponse {
  base?: string;
  rates?: Record<string, number>;
}

export function createFallbackRateClient(options: { baseUrl: string; timeoutMs?: number; fetch?: typeof fetch }): RateProvider {
  const doFetch = options.fetch ?? fetch;
  return {
    source: "fallback_provider",
    async latest() {
      let response: Response;
      try {
        response = await doFetch(`${options.baseUrl}/latest?base=USD&symbols=MXN`, {
          headers: { Accept: "application/json" },
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
      } catch (error) {
        throw new RateProviderError(`fallback rate request failed: ${(error as Error).message}`);
      }
      if (!response.ok) throw new RateProviderError(`fallback rate provider answered HTTP ${response.status}`);
      const body = (await response.json().catch(() => undefined)) as FrankfurterResponse | undefined;
      const rate = body?.base === "USD" ? body.rates?.MXN : undefined;
      if (typeof rate !== "number" || !(rate > 0)) throw new RateProviderError("fallback rate provider gave no USD/MXN rate");
      // The JSON number's shortest decimal form is the precision the provider gave.
      return { usdMxn: String(rate) };
    },
  };
}
