/**
 * Client of the central bank's CEP portal (Banxico, https://www.banxico.org.mx/cep/): fetches the
 * signed receipt (CEP) of a SPEI payment.
 *
 * Protocol facts relied on. Sources: the cepmex client (github.com/cuenca-mx/cep-python: cep/client.py,
 * cep/transferencia.py, and its recorded portal sessions in tests/cassettes/*.yaml, 2019 to 2025);
 * other public clients of the portal agree on the paths and fields.
 * 1. Lookup: POST {base}/valida.do, application/x-www-form-urlencoded, fields
 *    tipoCriterio=T (search by tracking key; R = by reference number), fecha=DD-MM-YYYY (date of the
 *    payment), criterio=<clave de rastreo>, emisor=<sending participant code>, receptor=<receiving
 *    participant code>, cuenta=<beneficiary account>, receptorParticipante=0 (1 = the beneficiary is
 *    the receiving institution itself), monto=<amount, e.g. 3414.95>, captcha=c, tipoConsulta=1
 *    (1 = download the CEP; 0 = payment status only).
 * 2. The answer is an HTML fragment (200) that sets the session cookie (JSESSIONID, plus load-balancer
 *    cookies). Texts recognised (matched without accents, case or HTML entities):
 *    - found: "Descargar CEP" page with links descarga.do?formato=PDF|XML|ZIP;
 *    - not found: "[BE] No se encontró ningún pago con la información proporcionada" or
 *      "Operación no encontrada" (the latter inside a "no es posible generar el CEP" box);
 *    - found, CEP not yet available: "Lo sentimos, por el momento no es posible generar el CEP. Con la
 *      información proporcionada se identificó el siguiente pago:" and a table of the payment status;
 *    - too many queries: "Lo sentimos, pero ha excedido el número máximo de consultas en este portal.
 *      Favor de intentar nuevamente más tarde." (seen on descarga.do), and, on valida.do, the portal
 *      falling back to its image captcha: "La imagen de seguridad no fue ingresada correctamente".
 *      Both are rate limiting; the portal gives no Retry-After (a 429 with one is honoured anyway).
 * 3. Download in the same session: GET {base}/descarga.do?formato=XML with the cookies from step 2;
 *    200 application/xml, Content-Disposition attachment; filename=CEP-YYYYMMDD-<clave>.xml. The root
 *    is <SPEI_Tercero> (see src/integrations/cep-receipt.ts). Without the session the portal cannot
 *    know which payment is meant.
 * 4. The portal redirects http to https (307); fetch follows it and resends the form.
 * Anything else (network error, timeout, 5xx, any other page, an XML that does not parse) is
 * `unavailable`: the caller retries with backoff until the order's lock expires.
 */
import { Decimal } from "decimal.js";
import { CepParseError, parseCepXml } from "./cep-receipt.ts";
import type { CepReceipt } from "./cep-receipt.ts";

export type CepQuery = {
  /** Date of the payment, YYYY-MM-DD (the date the buyer paid, Mexico City). */
  operationDate: string;
  /** Clave de rastreo. */
  trackingKey: string;
  /** Sending bank's SPEI participant code (5 digits). */
  senderBankCode: string;
  /** Receiving bank's SPEI participant code (5 digits): the seller CLABE's bank. */
  receiverBankCode: string;
  /** Beneficiary account (the seller's CLABE). */
  beneficiaryAccount: string;
  /** Amount paid, decimal string. */
  amountMxn: string;
};

export type CepLookupResult =
  | { kind: "found"; xml: string; receipt: CepReceipt }
  | { kind: "not_found" }
  | { kind: "not_yet_available" }
  | { kind: "rate_limited"; retryAfterSeconds?: number }
  | { kind: "unavailable"; reason: string };

export type CepPortalClientOptions = {
  /** Portal base, e.g. "https://www.banxico.org.mx/cep" (no trailing slash needed). */
  baseUrl: string;
  /** Deadline for the whole lookup (query and download). */
  timeoutMs: number;
  fetch?: typeof fetch;
  userAgent?: string;
};

export type CepPortalClient = {
  fetchCep(query: CepQuery): Promise<CepLookupResult>;
};

/** Thrown by fetchCep for a query that cannot be sent (a caller bug, not a portal answer). */
export class CepQueryError extends Error {
  readonly field: keyof CepQuery;

  constructor(field: keyof CepQuery, message: string) {
    super(message);
    this.name = "CepQueryError";
    this.field = field;
  }
}

const DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; offramp-cep-client/1.0)";

type FormFields = Record<string, string>;

function validDate(ymd: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(ymd);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** The valida.do form for a query; throws CepQueryError on a malformed query. */
export function buildCepForm(query: CepQuery): FormFields {
  if (!validDate(query.operationDate)) throw new CepQueryError("operationDate", "operationDate must be a YYYY-MM-DD date");
  const trackingKey = query.trackingKey.trim();
  if (!/^[A-Za-z0-9]{1,30}$/.test(trackingKey)) throw new CepQueryError("trackingKey", "trackingKey must be 1 to 30 letters or digits");
  if (!/^\d{4,5}$/.test(query.senderBankCode)) throw new CepQueryError("senderBankCode", "senderBankCode must be a 5-digit SPEI participant code");
  if (!/^\d{4,5}$/.test(query.receiverBankCode)) throw new CepQueryError("receiverBankCode", "receiverBankCode must be a 5-digit SPEI participant code");
  if (!/^\d{10,18}$/.test(query.beneficiaryAccount)) throw new CepQueryError("beneficiaryAccount", "beneficiaryAccount must be 10 to 18 digits");
  if (!/^\d+(\.\d{1,2})?$/.test(query.amountMxn) || new Decimal(query.amountMxn).lte(0)) {
    throw new CepQueryError("amountMxn", "amountMxn must be a positive amount with at most 2 decimals");
  }
  const [y, m, d] = query.operationDate.split("-");
  return {
    tipoCriterio: "T",
    fecha: `${d}-${m}-${y}`,
    criterio: trackingKey,
    emisor: query.senderBankCode,
    receptor: query.receiverBankCode,
    cuenta: query.beneficiaryAccount,
    receptorParticipante: "0",
    monto: new Decimal(query.amountMxn).toFixed(2),
    captcha: "c",
    tipoConsulta: "1",
  };
}

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", reg: "®" };

/** HTML to comparable text: comments dropped, entities decoded, accents removed, lower case, spaces collapsed. */
export function normalisePortalText(html: string): string {
  return html
    .replace(/<!--[\s\S]*?-->/g, " ")
    .replace(/&([A-Za-z])(acute|grave|uml|tilde|circ|cedil);/g, "$1")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&([a-z]+);/gi, (all, name: string) => NAMED_ENTITIES[name.toLowerCase()] ?? all)
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/\s+/g, " ");
}

export type PortalPage = "download_links" | "not_found" | "not_yet_available" | "rate_limited" | "temporary_error" | "unknown";

/** Classifies an HTML answer of valida.do or descarga.do by the texts the portal uses. */
export function classifyPortalPage(html: string): PortalPage {
  const text = normalisePortalText(html);
  if (text.includes("excedido el numero maximo de consultas")) return "rate_limited";
  if (text.includes("la imagen de seguridad no fue ingresada correctamente")) return "rate_limited";
  if (text.includes("no se encontro ningun pago") || text.includes("operacion no encontrada")) return "not_found";
  if (text.includes("no es posible generar el cep")) return "not_yet_available";
  if (text.includes("descarga.do?formato=xml")) return "download_links";
  if (
    text.includes("intente nuevamente mas tarde") ||
    text.includes("ocurrio un error") ||
    text.includes("el horario de consulta es")
  ) {
    return "temporary_error";
  }
  return "unknown";
}

function decodeBody(bytes: ArrayBuffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Some portal pages are served as ISO-8859-1 despite the UTF-8 header.
    return new TextDecoder("latin1").decode(bytes);
  }
}

function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

function cookiesFrom(res: Response, jar: Map<string, string>): void {
  for (const header of res.headers.getSetCookie()) {
    const pair = header.split(";", 1)[0] ?? "";
    const eq = pair.indexOf("=");
    if (eq <= 0) continue;
    jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
}

function cookieHeader(jar: Map<string, string>): string {
  return [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
}

type HttpOutcome = { res: Response; body: string } | { failure: CepLookupResult };

function pageResult(page: PortalPage, step: string): CepLookupResult {
  switch (page) {
    case "not_found":
      return { kind: "not_found" };
    case "not_yet_available":
      return { kind: "not_yet_available" };
    case "rate_limited":
      return { kind: "rate_limited" };
    case "temporary_error":
      return { kind: "unavailable", reason: `portal reported a temporary error on ${step}` };
    default:
      return { kind: "unavailable", reason: `unexpected page from ${step}` };
  }
}

export function createCepPortalClient(options: CepPortalClientOptions): CepPortalClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const timeoutMs = options.timeoutMs;
  if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be positive");

  async function request(url: string, init: RequestInit, step: string, signal: AbortSignal): Promise<HttpOutcome> {
    let res: Response;
    let body: string;
    try {
      res = await doFetch(url, { ...init, signal, redirect: "follow" });
      body = decodeBody(await res.arrayBuffer());
    } catch (err) {
      if (signal.aborted) return { failure: { kind: "unavailable", reason: `timeout after ${timeoutMs} ms on ${step}` } };
      return { failure: { kind: "unavailable", reason: `network error on ${step}: ${(err as Error).message}` } };
    }
    if (res.status === 429) {
      const retryAfterSeconds = parseRetryAfter(res.headers.get("retry-after"), Date.now());
      return { failure: retryAfterSeconds === undefined ? { kind: "rate_limited" } : { kind: "rate_limited", retryAfterSeconds } };
    }
    if (res.status >= 500) return { failure: { kind: "unavailable", reason: `HTTP ${res.status} on ${step}` } };
    if (res.status !== 200) return { failure: { kind: "unavailable", reason: `unexpected HTTP ${res.status} on ${step}` } };
    return { res, body };
  }

  async function fetchCep(query: CepQuery): Promise<CepLookupResult> {
    const form = buildCepForm(query);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error("CEP lookup timed out")), timeoutMs);
    const jar = new Map<string, string>();
    try {
      const lookup = await request(
        `${baseUrl}/valida.do`,
        {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            accept: "text/html,application/xhtml+xml,*/*",
            "user-agent": userAgent,
          },
          body: new URLSearchParams(form).toString(),
        },
        "valida.do",
        controller.signal,
      );
      if ("failure" in lookup) return lookup.failure;
      cookiesFrom(lookup.res, jar);
      const page = classifyPortalPage(lookup.body);
      if (page !== "download_links") return pageResult(page, "valida.do");
      if (jar.size === 0) return { kind: "unavailable", reason: "valida.do set no session cookie" };

      const download = await request(
        `${baseUrl}/descarga.do?formato=XML`,
        { method: "GET", headers: { cookie: cookieHeader(jar), accept: "application/xml,*/*", "user-agent": userAgent } },
        "descarga.do",
        controller.signal,
      );
      if ("failure" in download) return download.failure;
      const xml = download.body;
      if (!/<SPEI_Tercero[\s>/]/.test(xml)) return pageResult(classifyPortalPage(xml), "descarga.do");
      try {
        return { kind: "found", xml, receipt: parseCepXml(xml) };
      } catch (err) {
        if (err instanceof CepParseError) return { kind: "unavailable", reason: `CEP XML rejected: ${err.message}` };
        throw err;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  return { fetchCep };
}
