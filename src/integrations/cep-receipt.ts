/**
 * CEP (Comprobante Electrónico de Pago) receipts: parsing the XML the central bank's CEP portal
 * serves (`descarga.do?formato=XML`) and checking a receipt against an order.
 *
 * XML shape (see src/integrations/cep-portal.ts for the sources):
 *
 *   <SPEI_Tercero FechaOperacion="2024-11-08" Hora="10:53:36" ClaveSPEI="90723" sello="..."
 *       numeroCertificado="00000100000100014853" cadenaCDA="||1|08112024|08112024|105336|90723|..."
 *       claveRastreo="...">
 *     <Beneficiario BancoReceptor=".." Nombre=".." TipoCuenta="40" Cuenta=".." RFC=".." Concepto=".."
 *         IVA="0.00" MontoPago="3414.95"/>
 *     <Ordenante BancoEmisor=".." Nombre=".." TipoCuenta="40" Cuenta=".." RFC=".."/>
 *   </SPEI_Tercero>
 *
 * - The tracking key attribute is spelled `claveRastreo` by the portal; `ClaveRastreo` is accepted too.
 * - `FechaOperacion` is the SPEI operation (settlement) date, which is the next business day for a
 *   payment made after the end of the business day or on a weekend. The calendar date the payment was
 *   credited is field 4 of `cadenaCDA` (DDMMYYYY; field 3 repeats the operation date, field 5 is the
 *   time hhmmss), and `Hora` is the time of day, Mexico City time. The instant of the payment
 *   (`operationAt`) is therefore credit date + `Hora` in America/Mexico_City, converted to UTC.
 * - `MontoPago` comes as "3414.95", "300" or zero-padded "000000000000008.17".
 */
import { Decimal } from "decimal.js";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { keccak256, stringToBytes } from "viem";
import { MEXICO_CITY_ZONE } from "../domain/periods.ts";

export type CepReceipt = {
  /** Clave de rastreo, as the central bank has it. */
  trackingKey: string;
  /** SPEI operation date (FechaOperacion), YYYY-MM-DD. */
  operationDate: string;
  /** Calendar date the payment was credited (cadenaCDA), YYYY-MM-DD; falls back to operationDate. */
  creditDate: string;
  /** Time of the payment, HH:MM:SS Mexico City time; null when the receipt carries none. */
  operationTime: string | null;
  /** Instant of the payment, ISO 8601 UTC (creditDate + operationTime in Mexico City); null when the time is unknown. */
  operationAt: string | null;
  /** Amount paid, exactly 2 decimals, e.g. "1234.50". */
  amountMxn: string;
  ivaMxn: string;
  beneficiaryAccount: string;
  beneficiaryAccountType: string;
  beneficiaryBank: string;
  beneficiaryName: string;
  beneficiaryRfc: string;
  senderAccount: string;
  senderAccountType: string;
  senderBank: string;
  senderName: string;
  senderRfc: string;
  concept: string;
  /** ClaveSPEI: participant code of the institution that received the payment and issued the CEP. */
  speiKey: string;
  /** Payment type (first field of cadenaCDA, e.g. "1" third party to third party); null if absent. */
  paymentType: string | null;
  certificateNumber: string;
  seal: string;
  cadenaCDA: string;
  /**
   * 0x-prefixed keccak256 identifying the payment this receipt proves: the "CEP used once" key.
   * See cepHashOf for what it covers.
   */
  cepHash: `0x${string}`;
};

export type CepParseErrorCode = "MALFORMED_XML" | "UNEXPECTED_ROOT" | "MISSING_FIELD" | "INVALID_FIELD";

export class CepParseError extends Error {
  readonly code: CepParseErrorCode;
  readonly field: string | undefined;

  constructor(code: CepParseErrorCode, message: string, field?: string) {
    super(message);
    this.name = "CepParseError";
    this.code = code;
    this.field = field;
  }
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseAttributeValue: false,
  parseTagValue: false,
  htmlEntities: true,
  trimValues: false,
});

type Attrs = Record<string, unknown>;

function isRecord(value: unknown): value is Attrs {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function child(root: Attrs, name: string): Attrs {
  const value = root[name];
  if (value === undefined) throw new CepParseError("MISSING_FIELD", `CEP XML has no <${name}> element`, name);
  if (Array.isArray(value)) throw new CepParseError("INVALID_FIELD", `CEP XML has more than one <${name}> element`, name);
  if (isRecord(value)) return value;
  // <Beneficiario/> with no attributes parses as an empty string.
  return {};
}

function optionalAttr(el: Attrs, name: string, path: string): string | undefined {
  const value = el[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new CepParseError("INVALID_FIELD", `${path}@${name} is not an attribute`, `${path}@${name}`);
  return value.trim();
}

function requiredAttr(el: Attrs, name: string, path: string): string {
  const value = optionalAttr(el, name, path);
  if (value === undefined || value === "") {
    throw new CepParseError("MISSING_FIELD", `CEP XML is missing ${path}@${name}`, `${path}@${name}`);
  }
  return value;
}

function isValidYmd(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

function parseIsoDate(value: string, field: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m || !isValidYmd(Number(m[1]), Number(m[2]), Number(m[3]))) {
    throw new CepParseError("INVALID_FIELD", `${field} is not a YYYY-MM-DD date: ${JSON.stringify(value)}`, field);
  }
  return value;
}

/** DDMMYYYY (cadenaCDA) to YYYY-MM-DD; undefined when not a valid date. */
function ddmmyyyyToIso(value: string | undefined): string | undefined {
  const m = value === undefined ? null : /^(\d{2})(\d{2})(\d{4})$/.exec(value);
  if (!m || !isValidYmd(Number(m[3]), Number(m[2]), Number(m[1]))) return undefined;
  return `${m[3]}-${m[2]}-${m[1]}`;
}

function normaliseTime(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d{2}):?(\d{2}):?(\d{2})$/.exec(value);
  if (!m || Number(m[1]) > 23 || Number(m[2]) > 59 || Number(m[3]) > 59) return undefined;
  return `${m[1]}:${m[2]}:${m[3]}`;
}

function parseAmount(value: string, field: string): string {
  let amount: Decimal;
  try {
    amount = new Decimal(value);
  } catch {
    throw new CepParseError("INVALID_FIELD", `${field} is not a number: ${JSON.stringify(value)}`, field);
  }
  if (!/^\d+(\.\d+)?$/.test(value) || !amount.isFinite() || amount.isNegative() || amount.decimalPlaces() > 2) {
    throw new CepParseError("INVALID_FIELD", `${field} is not an amount with at most 2 decimals: ${JSON.stringify(value)}`, field);
  }
  return amount.toFixed(2);
}

const wallClock = new Intl.DateTimeFormat("en-US", {
  timeZone: MEXICO_CITY_ZONE,
  hourCycle: "h23",
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});

function wallClockParts(instantMs: number): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
  const parts: Record<string, number> = {};
  for (const p of wallClock.formatToParts(new Date(instantMs))) {
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  }
  return { y: parts.year ?? 0, mo: parts.month ?? 0, d: parts.day ?? 0, h: parts.hour ?? 0, mi: parts.minute ?? 0, s: parts.second ?? 0 };
}

function zoneOffsetMs(instantMs: number): number {
  const w = wallClockParts(instantMs);
  return Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(instantMs / 1000) * 1000;
}

/** Mexico City wall-clock date (YYYY-MM-DD) and time (HH:MM:SS) to the UTC instant. */
export function mexicoCityToUtc(date: string, time: string): Date {
  const [y, mo, d] = date.split("-").map(Number) as [number, number, number];
  const [h, mi, s] = time.split(":").map(Number) as [number, number, number];
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, s);
  let instant = asUtc - zoneOffsetMs(asUtc);
  // A second pass settles wall times near an offset change (Mexico City had DST until October 2022).
  instant = asUtc - zoneOffsetMs(instant);
  return new Date(instant);
}

/** The Mexico City calendar date (YYYY-MM-DD) and time (HH:MM:SS) of an instant. */
export function mexicoCityDateTime(instant: Date): { date: string; time: string } {
  const w = wallClockParts(instant.getTime());
  const p2 = (n: number) => String(n).padStart(2, "0");
  return { date: `${w.y}-${p2(w.mo)}-${p2(w.d)}`, time: `${p2(w.h)}:${p2(w.mi)}:${p2(w.s)}` };
}

/**
 * The "CEP used once" key: keccak256 over the identity of the SPEI payment the receipt proves, not over
 * the document's bytes. A tracking key is unique per sending institution and operation day, so
 * (operation date, receiving participant, tracking key, sender account, beneficiary account, amount)
 * names one payment; downloading the same CEP again, or the central bank re-issuing it under a new
 * certificate or seal, gives the same key, so one payment can never settle two orders.
 */
export function cepHashOf(r: Pick<CepReceipt, "operationDate" | "speiKey" | "trackingKey" | "senderAccount" | "beneficiaryAccount" | "amountMxn">): `0x${string}` {
  const canonical = [
    "SPEI-CEP/v1",
    r.operationDate,
    r.speiKey,
    r.trackingKey.toUpperCase(),
    r.senderAccount,
    r.beneficiaryAccount,
    r.amountMxn,
  ].join("|");
  return keccak256(stringToBytes(canonical));
}

/** Parses a CEP XML document. Throws CepParseError when it is malformed or lacks a required field. */
export function parseCepXml(xml: string): CepReceipt {
  if (typeof xml !== "string" || xml.trim() === "") throw new CepParseError("MALFORMED_XML", "CEP XML is empty");
  const text = xml.replace(/^\uFEFF/, "");
  if (/<!DOCTYPE/i.test(text)) throw new CepParseError("MALFORMED_XML", "CEP XML must not carry a DOCTYPE");
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new CepParseError("MALFORMED_XML", `CEP XML is not well-formed: ${valid.err.msg} (line ${valid.err.line}, col ${valid.err.col})`);
  }
  let doc: unknown;
  try {
    doc = parser.parse(text);
  } catch (err) {
    throw new CepParseError("MALFORMED_XML", `CEP XML could not be parsed: ${(err as Error).message}`);
  }
  if (!isRecord(doc)) throw new CepParseError("MALFORMED_XML", "CEP XML has no root element");
  const roots = Object.keys(doc).filter((k) => k !== "?xml");
  if (roots.length !== 1 || roots[0] !== "SPEI_Tercero") {
    throw new CepParseError("UNEXPECTED_ROOT", `CEP XML root must be <SPEI_Tercero>, got ${roots.map((r) => `<${r}>`).join(", ") || "nothing"}`);
  }
  const root = child(doc, "SPEI_Tercero");
  const R = "SPEI_Tercero";
  const B = "SPEI_Tercero/Beneficiario";
  const O = "SPEI_Tercero/Ordenante";
  const beneficiario = child(root, "Beneficiario");
  const ordenante = child(root, "Ordenante");

  const operationDate = parseIsoDate(requiredAttr(root, "FechaOperacion", R), `${R}@FechaOperacion`);
  const trackingKey = optionalAttr(root, "claveRastreo", R) || optionalAttr(root, "ClaveRastreo", R);
  if (!trackingKey) throw new CepParseError("MISSING_FIELD", `CEP XML is missing ${R}@claveRastreo`, `${R}@claveRastreo`);
  const speiKey = requiredAttr(root, "ClaveSPEI", R);
  if (!/^\d{4,5}$/.test(speiKey)) throw new CepParseError("INVALID_FIELD", `${R}@ClaveSPEI is not a participant code: ${JSON.stringify(speiKey)}`, `${R}@ClaveSPEI`);
  const seal = requiredAttr(root, "sello", R);
  const certificateNumber = requiredAttr(root, "numeroCertificado", R);
  const cadenaCDA = requiredAttr(root, "cadenaCDA", R);

  const cda = cadenaCDA.split("|");
  const creditDate = ddmmyyyyToIso(cda[4]) ?? operationDate;
  const horaAttr = optionalAttr(root, "Hora", R);
  if (horaAttr && normaliseTime(horaAttr) === undefined) {
    throw new CepParseError("INVALID_FIELD", `${R}@Hora is not a HH:MM:SS time: ${JSON.stringify(horaAttr)}`, `${R}@Hora`);
  }
  const operationTime = normaliseTime(horaAttr || undefined) ?? normaliseTime(cda[5]) ?? null;
  const operationAt = operationTime === null ? null : mexicoCityToUtc(creditDate, operationTime).toISOString();

  const beneficiaryAccount = requiredAttr(beneficiario, "Cuenta", B);
  const senderAccount = requiredAttr(ordenante, "Cuenta", O);
  const amountMxn = parseAmount(requiredAttr(beneficiario, "MontoPago", B), `${B}@MontoPago`);
  const ivaRaw = optionalAttr(beneficiario, "IVA", B);
  const ivaMxn = ivaRaw ? parseAmount(ivaRaw, `${B}@IVA`) : "0.00";

  const receipt: Omit<CepReceipt, "cepHash"> = {
    trackingKey,
    operationDate,
    creditDate,
    operationTime,
    operationAt,
    amountMxn,
    ivaMxn,
    beneficiaryAccount,
    beneficiaryAccountType: optionalAttr(beneficiario, "TipoCuenta", B) ?? "",
    beneficiaryBank: requiredAttr(beneficiario, "BancoReceptor", B),
    beneficiaryName: requiredAttr(beneficiario, "Nombre", B),
    beneficiaryRfc: optionalAttr(beneficiario, "RFC", B) ?? "",
    senderAccount,
    senderAccountType: optionalAttr(ordenante, "TipoCuenta", O) ?? "",
    senderBank: requiredAttr(ordenante, "BancoEmisor", O),
    senderName: requiredAttr(ordenante, "Nombre", O),
    senderRfc: optionalAttr(ordenante, "RFC", O) ?? "",
    concept: optionalAttr(beneficiario, "Concepto", B) ?? "",
    speiKey,
    paymentType: cda[2] ? cda[2] : null,
    certificateNumber,
    seal,
    cadenaCDA,
  };
  return { ...receipt, cepHash: cepHashOf(receipt) };
}

export type CepExpectation = {
  /** The seller's CLABE: the payment's beneficiary account must be exactly this. */
  sellerClabe: string;
  /** The order's totalMxn: the amount paid must be at least this (decimal string). */
  totalMxn: string;
  /** The tracking key the buyer reported. */
  trackingKey: string;
  lockedAt: Date;
  lockExpiresAt: Date;
};

export type CepMismatchReason = "BENEFICIARY_MISMATCH" | "AMOUNT_TOO_LOW" | "DATE_OUTSIDE_LOCK_WINDOW" | "TRACKING_KEY_MISMATCH" | "CONCEPT_MISMATCH";

export type CepVerification = { ok: true } | { ok: false; reason: CepMismatchReason; message: string };

function floorToSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

/**
 * Checks a parsed receipt against the order. Checks, in order: beneficiary account, amount, date,
 * tracking key; the first failure is returned. Whether this CEP already settled another order is the
 * caller's check, against the database, on `receipt.cepHash`.
 *
 * - Beneficiary: the receipt's account equals the seller's CLABE (digits compared exactly).
 * - Amount: exact decimal comparison, amount paid >= totalMxn (paying more passes).
 * - Date: the payment instant must lie in [lockedAt, lockExpiresAt], both ends included. The receipt
 *   has one-second resolution, so lockedAt is compared truncated to its second (a payment in the same
 *   second as the lock passes).
 *   Unknown time (a receipt with no Hora and no time in cadenaCDA; the real portal always sends one):
 *   the payment can be anywhere in its Mexico City calendar day, so it passes only if that whole day
 *   lies inside the window. A day that merely overlaps the window fails with DATE_OUTSIDE_LOCK_WINDOW:
 *   releasing funds is irreversible, and a payment made before the lock (for something else) must not
 *   be accepted on a guess. That case goes to a dispute, where the arbiter can look at the receipt.
 * - Tracking key: equal to the reported one, ignoring surrounding spaces and letter case.
 * The payment concept is checked by verifyCepConcept, after the "CEP used once" checks.
 */
export function verifyCepReceipt(receipt: CepReceipt, expectation: CepExpectation): CepVerification {
  const sellerClabe = expectation.sellerClabe.replace(/\s+/g, "");
  if (receipt.beneficiaryAccount !== sellerClabe) {
    return {
      ok: false,
      reason: "BENEFICIARY_MISMATCH",
      message: `The payment went to account ${receipt.beneficiaryAccount}, not to the seller's CLABE ${sellerClabe}.`,
    };
  }

  let total: Decimal;
  try {
    total = new Decimal(expectation.totalMxn);
  } catch {
    throw new RangeError(`verifyCepReceipt: totalMxn is not a decimal: ${JSON.stringify(expectation.totalMxn)}`);
  }
  if (new Decimal(receipt.amountMxn).lessThan(total)) {
    return {
      ok: false,
      reason: "AMOUNT_TOO_LOW",
      message: `The payment of ${receipt.amountMxn} MXN is less than the order total of ${total.toFixed(2)} MXN.`,
    };
  }

  const from = floorToSecond(expectation.lockedAt.getTime());
  const to = expectation.lockExpiresAt.getTime();
  if (Number.isNaN(from) || Number.isNaN(to)) throw new RangeError("verifyCepReceipt: lockedAt and lockExpiresAt must be valid dates");
  const windowText = `[${new Date(from).toISOString()}, ${expectation.lockExpiresAt.toISOString()}]`;
  if (receipt.operationAt !== null) {
    const at = Date.parse(receipt.operationAt);
    if (!(at >= from && at <= to)) {
      return {
        ok: false,
        reason: "DATE_OUTSIDE_LOCK_WINDOW",
        message: `The payment was made at ${receipt.operationAt}, outside the lock window ${windowText}.`,
      };
    }
  } else {
    const dayStart = mexicoCityToUtc(receipt.creditDate, "00:00:00").getTime();
    const dayLast = mexicoCityToUtc(receipt.creditDate, "23:59:59").getTime();
    if (!(dayStart >= from && dayLast <= to)) {
      return {
        ok: false,
        reason: "DATE_OUTSIDE_LOCK_WINDOW",
        message: `The receipt gives the payment date ${receipt.creditDate} but no time, and that day is not entirely inside the lock window ${windowText}.`,
      };
    }
  }

  if (receipt.trackingKey.trim().toUpperCase() !== expectation.trackingKey.trim().toUpperCase()) {
    return {
      ok: false,
      reason: "TRACKING_KEY_MISMATCH",
      message: `The receipt's tracking key ${receipt.trackingKey} is not the reported ${expectation.trackingKey.trim()}.`,
    };
  }
  return { ok: true };
}

/**
 * The payment concept (decisions 17): the receipt's concept must contain the order's payment concept
 * (OFR + 7 digits), ignoring letter case and spaces, so "Pago OFR 1234567" ties the payment to the order
 * OFR1234567 and to no other.
 */
export function verifyCepConcept(receipt: Pick<CepReceipt, "concept">, concept: string): CepVerification {
  const squeeze = (text: string) => text.replace(/\s+/g, "").toUpperCase();
  if (squeeze(receipt.concept).includes(squeeze(concept))) return { ok: true };
  return {
    ok: false,
    reason: "CONCEPT_MISMATCH",
    message: `The payment's concept "${receipt.concept}" does not contain the order's payment concept ${concept}.`,
  };
}
