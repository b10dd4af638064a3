// Client of the central bank's SIE API (Banxico), series SF43718: the FIX USD/MXN rate.
// Protocol: GET {base}/series/SF43718/datos/oportuno with header `Bmx-Token: <token>`; the answer is
// `{ bmx: { series: [{ idSerie, titulo, datos: [{ fecha: "dd/mm/yyyy", dato: "17.2500" }] }] } }`.
// `dato` is "N/E" when there is no determination; that and any error mean the rate is unavailable.

export const FIX_SERIES = "SF43718";

export interface RateQuote {
  /** Decimal string with the source's precision (FIX has 4 decimals). */
  usdMxn: string;
}

export interface RateProvider {
  readonly source: "central_bank" | "fallback_provider";
  latest(): Promise<RateQuote>;
}

export class RateProviderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RateProviderError";
  }
}

interface SieResponse {
  bmx?: { series?: { idSerie?: string; datos?: { fecha?: string; dato?: string }[] }[] };
}

export function createBanxicoSieClient(options: { baseUrl: string; token: string; timeoutMs?: number; fetch?: typeof fetch }): RateProvider {
  const doFetch = options.fetch ?? fetch;
  return {
    source: "central_bank",
    async latest() {
      let response: Response;
      try {
        response = await doFetch(`${options.baseUrl}/series/${FIX_SERIES}/datos/oportuno`, {
          headers: { "Bmx-Token": options.token, Accept: "application/json" },
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
      } catch (error) {
        throw new RateProviderError(`SIE request failed: ${(error as Error).message}`);
      }
      if (!response.ok) throw new RateProviderError(`SIE answered HTTP ${response.status}`);
      const body = (await response.json().catch(() => undefined)) as SieResponse | undefined;
      const serie = body?.bmx?.series?.find((entry) => entry.idSerie === FIX_SERIES);
      const dato = serie?.datos?.at(-1)?.dato?.trim();
      if (!dato || dato === "N/E") throw new RateProviderError("SIE has no FIX determination (N/E)");
      if (!/^\d+(\.\d+)?$/.test(dato.replaceAll(",", ""))) throw new RateProviderError(`SIE answered an unreadable rate "${dato}"`);
      return { usdMxn: dato.replaceAll(",", "") };
    },
  };
}
