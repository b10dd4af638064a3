/**
 * Sandbox simulator of the central bank's CEP portal. It speaks the portal's protocol (documented in
 * src/integrations/cep-portal.ts), so the production client runs against it unchanged:
 *
 *   GET  /                         the query form (for people; clients post directly)
 *   POST /valida.do                the query; sets the JSESSIONID session cookie and answers with the
 *                                  portal's HTML: download links, not found, found but CEP not yet
 *                                  available, too many queries, or the captcha error
 *   GET  /descarga.do?formato=XML  the CEP of the payment found in this session (also PDF and ZIP)
 *
 * Routes are relative; the host app mounts the router at a prefix such as /simulators/cep.
 * Payments are recorded in memory by the sandbox (recordPayment) and, with `shared`, also in a store every
 * instance of the service reads (the database), so a payment recorded by one instance is found by the
 * portal of another (decisions section 14: instances share the database). The receipts have the real XML shape
 * (SPEI_Tercero with cadenaCDA in the portal's 2024 layout) and a deterministic fake `sello` (a hash of
 * the cadena, not an RSA signature) under a fake certificate number.
 *
 * Simulator decisions where the real portal's behaviour is not known:
 * - A payment is found by tracking key (case-insensitive) or reference number, sending and receiving
 *   participant, beneficiary account and exact amount; the date may be the calendar date of the payment
 *   in Mexico City or its SPEI operation date.
 * - The SPEI operation date of a payment made on a Saturday or Sunday is the following Monday (no
 *   holiday calendar); `speiOperationDate` overrides it.
 * - descarga.do without a session holding a found payment answers a generic error page.
 */
import { createHash, randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";
import type { Router } from "@koa/router";
import { Decimal } from "decimal.js";
import type { Context } from "koa";
import { mexicoCityDateTime } from "../../integrations/cep-receipt.ts";
import { findParticipantByCode } from "../../domain/spei-participants.ts";
import { createRouter } from "../../http/router.ts";

export type CepPortalSimulatorMode = "normal" | "not_yet_available" | "rate_limited" | "down" | "malformed_xml";

export type SimulatedSpeiPayment = {
  /** Clave de rastreo; generated in the usual bank format when absent. */
  trackingKey?: string;
  /** Numeric reference (referencia numérica, up to 7 digits); generated when absent. */
  reference?: string;
  operationAt: Date;
  amountMxn: string;
  beneficiaryAccount: string;
  beneficiaryName?: string;
  beneficiaryRfc?: string;
  /** Receiving participant code (5 digits). */
  receiverBankCode: string;
  /** Sending participant code (5 digits). */
  senderBankCode: string;
  senderAccount?: string;
  senderName?: string;
  senderRfc?: string;
  concept?: string;
  /** Before this instant the portal answers "payment found, CEP not yet available". */
  availableAfter?: Date;
  /** SPEI operation date (YYYY-MM-DD) when it differs from the default rule. */
  speiOperationDate?: string;
};

export type CepPortalSimulator = {
  router: Router;
  recordPayment(payment: SimulatedSpeiPayment): { trackingKey: string };
  /** Resolves once every recorded payment is in the shared store (at once without one). */
  flush(): Promise<void>;
  setMode(mode: CepPortalSimulatorMode): void;
  getMode(): CepPortalSimulatorMode;
  /** Forgets every payment and session and returns to "normal". */
  reset(): void;
};

/** A recorded payment as the shared store keeps it (JSON). */
export type SharedSpeiPayment = Omit<StoredPayment, "operationAt" | "amount" | "availableAfter"> & { operationAt: string; amount: string; availableAfter: string | null };

/** Where payments are shared between instances: each saved on record, read back when a query misses. */
export type SharedSpeiPayments = {
  save(payment: SharedSpeiPayment): Promise<void>;
  /** The payments whose tracking key (case-insensitive) or reference is `criterio`. */
  find(criterio: string): Promise<SharedSpeiPayment[]>;
};

export type CepPortalSimulatorOptions = {
  shared?: SharedSpeiPayments;
  now?: () => Date;
  /** numeroCertificado of the fake receipts. */
  certificateNumber?: string;
};

type StoredPayment = {
  trackingKey: string;
  reference: string;
  operationAt: Date;
  calendarDate: string;
  time: string;
  speiOperationDate: string;
  amount: Decimal;
  beneficiaryAccount: string;
  beneficiaryName: string;
  beneficiaryRfc: string;
  receiverBankCode: string;
  senderBankCode: string;
  senderAccount: string;
  senderName: string;
  senderRfc: string;
  concept: string;
  availableAfter: Date | undefined;
};

type Session = { payment: StoredPayment | undefined; touchedAt: number };

const SESSION_TTL_MS = 30 * 60 * 1000;
const FAKE_CERTIFICATE = "00001000000000000001";

const esc = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");

function bankName(code: string): string {
  return findParticipantByCode(code)?.name ?? code;
}

function accountType(account: string): string {
  if (account.length === 18) return "40"; // CLABE
  if (account.length === 16) return "3"; // debit card
  if (account.length === 10) return "10"; // mobile phone
  return "40";
}

function addDays(ymd: string, days: number): string {
  const [y, m, d] = ymd.split("-").map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

function defaultOperationDate(calendarDate: string): string {
  const [y, m, d] = calendarDate.split("-").map(Number) as [number, number, number];
  const weekday = new Date(Date.UTC(y, m - 1, d)).getUTCDay();
  if (weekday === 6) return addDays(calendarDate, 2);
  if (weekday === 0) return addDays(calendarDate, 1);
  return calendarDate;
}

const ddmmyyyy = (ymd: string): string => `${ymd.slice(8, 10)}${ymd.slice(5, 7)}${ymd.slice(0, 4)}`;

function fakeSeal(text: string): string {
  const blocks: Buffer[] = [];
  for (let i = 0; i < 8; i++) blocks.push(createHash("sha256").update(`cep-simulator-seal|${i}|${text}`).digest());
  return Buffer.concat(blocks).toString("base64"); // 256 bytes, the size of an RSA-2048 signature
}

function cepXml(p: StoredPayment, certificate: string): string {
  const amount = p.amount.toFixed(2);
  const fields = [
    "",
    "",
    "1", // payment type: third party to third party
    ddmmyyyy(p.speiOperationDate),
    ddmmyyyy(p.calendarDate),
    p.time.replace(/:/g, ""),
    p.receiverBankCode,
    bankName(p.senderBankCode),
    p.senderName,
    accountType(p.senderAccount),
    p.senderAccount,
    p.senderRfc,
    bankName(p.receiverBankCode),
    p.beneficiaryName,
    accountType(p.beneficiaryAccount),
    p.beneficiaryAccount,
    p.beneficiaryRfc,
    p.concept,
    "0.00",
    amount,
    "NA",
    "NA",
    "0",
    "0",
    "NA",
    "0",
    "0.00",
    ...Array.from({ length: 16 }, () => "NA"),
    certificate,
    "",
  ];
  const signed = fields.join("|");
  const sello = fakeSeal(signed);
  const cadena = `${signed}|${sello}`;
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\r\n` +
    `<SPEI_Tercero FechaOperacion="${p.speiOperationDate}" Hora="${p.time}" ClaveSPEI="${p.receiverBankCode}" sello="${sello}" ` +
    `numeroCertificado="${certificate}" cadenaCDA="${esc(cadena)}" claveRastreo="${esc(p.trackingKey)}">\r\n` +
    `    <Beneficiario BancoReceptor="${esc(bankName(p.receiverBankCode))}" Nombre="${esc(p.beneficiaryName)}" ` +
    `TipoCuenta="${accountType(p.beneficiaryAccount)}" Cuenta="${p.beneficiaryAccount}" RFC="${esc(p.beneficiaryRfc)}" ` +
    `Concepto="${esc(p.concept)}" IVA="0.00" MontoPago="${amount}"/>\r\n` +
    `    <Ordenante BancoEmisor="${esc(bankName(p.senderBankCode))}" Nombre="${esc(p.senderName)}" ` +
    `TipoCuenta="${accountType(p.senderAccount)}" Cuenta="${p.senderAccount}" RFC="${esc(p.senderRfc)}"/>\r\n` +
    `</SPEI_Tercero>`
  );
}

function ascii(s: string): string {
  return s.normalize("NFD").replace(/[\u0300-\u036f]/g, "").replace(/[^\x20-\x7e]/g, "?");
}

/** A one-page PDF listing the receipt's data (Helvetica, no images). */
function cepPdf(p: StoredPayment): Buffer {
  const lines = [
    "Comprobante Electronico de Pago (CEP) - SIMULADOR SANDBOX",
    "",
    `Fecha de operacion: ${p.speiOperationDate}   Fecha y hora de abono: ${p.calendarDate} ${p.time}`,
    `Clave de rastreo: ${p.trackingKey}`,
    `Institucion emisora: ${bankName(p.senderBankCode)}   Cuenta ordenante: ${p.senderAccount}`,
    `Ordenante: ${p.senderName}`,
    `Institucion receptora: ${bankName(p.receiverBankCode)}   Cuenta beneficiaria: ${p.beneficiaryAccount}`,
    `Beneficiario: ${p.beneficiaryName}`,
    `Concepto: ${p.concept}`,
    `Monto: $${p.amount.toFixed(2)}`,
    "",
    "Documento de prueba sin validez: generado por el simulador del portal CEP.",
  ].map((l) => ascii(l).replace(/([\\()])/g, "\\$1"));
  const content = `BT /F1 10 Tf 50 780 Td 14 TL\n${lines.map((l) => `(${l}) '`).join("\n")}\nET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    `<< /Length ${Buffer.byteLength(content, "latin1")} >>\nstream\n${content}\nendstream`,
  ];
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

/** A ZIP (stored, no compression) of the given files. */
function zip(files: { name: string; data: Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name, "utf8");
    const crc = crc32(f.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0, 10); // time/date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(f.data.length, 18);
    local.writeUInt32LE(f.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(f.data.length, 20);
    central.writeUInt32LE(f.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, f.data);
    centrals.push(central, name);
    offset += local.length + name.length + f.data.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

const HEAD =
  '<meta name="viewport" content="width=device-width,initial-scale=1,maximum-scale=1.0,user-scalable=no" />\n' +
  '<meta charset="utf-8" />\n<meta http-equiv="Content-type" content="text/html; charset=UTF-8" />\n';

function downloadLinksPage(): string {
  return (
    '\n<div class="bg-banxico title-bar">\n    <i class="icono-header icon-download"></i>\n    Descargar CEP\n</div>\n' +
    '<div class="generaComprobantes" style="width: 100%;margin-bottom: 78px;">\n' +
    '    <h2 style="text-align: center;">Gracias por utilizar el servicio de descarga de CEP</h2>\n' +
    '    <div id="dSeleccionaFormato" style="text-align: center; border: 0; display:block;">Haga clic sobre el &iacute;cono para descargar el CEP.<br /><br />\n' +
    '        <a href="descarga.do?formato=PDF" class="boton boton-descarga-pdf">PDF</a>\n' +
    '        <a href="descarga.do?formato=XML" class="boton boton-descarga-xml" style="margin-right: 20px;">XML</a>\n' +
    '        <a href="descarga.do?formato=ZIP" class="boton boton-descarga-zip">ZIP</a>\n' +
    "    </div>\n</div>"
  );
}

function errorFragment(message: string, hideCaptcha: boolean): string {
  return (
    '\r\n<div class="bg-banxico title-bar">\r\n    <i class="icono-header icon-warning3"></i>\r\n    Error\r\n</div>\r\n' +
    '<div id="#error_div">\r\n    <div class="info">\r\n        <p style="padding: 10px;max-width: 500px; text-align: center;">\r\n' +
    `            ${message}\r\n        </p>\r\n    </div>\r\n</div>\r\n` +
    `<input type="hidden" name="varHideCaptcha" value="${hideCaptcha ? "true" : "false"}"/>\r\n`
  );
}

const NOT_FOUND_PAGE = errorFragment(
  "[BE] No se encontr&oacute; ning&uacute;n pago con la informaci&oacute;n proporcionada. Verifique e intente nuevamente.",
  true,
);
const CAPTCHA_PAGE = errorFragment("La imagen de seguridad no fue ingresada correctamente. Favor de validar.", false);
const NO_SESSION_PAGE = errorFragment("No hay un pago consultado en esta sesi&oacute;n. Realice la consulta nuevamente.", true);

const RATE_LIMITED_PAGE =
  '\n<!DOCTYPE html>\n<html lang="es">\n    <head>\n        <meta http-equiv="Content-Type" content="text/html; charset=UTF-8">\n' +
  "        <title>Comprobante Electr&oacute;nico de Pago</title>\n    </head>\n    <body>\n" +
  '        <div id="pagewidth" >\n            <div id="appHead"><span class="appName">COMPROBANTE ELECTR&Oacute;NICO DE PAGO (CEP)</span></div>\n' +
  '            <div id="appMain" style="text-align: center;">\n' +
  "                <h1>Lo sentimos, pero ha excedido el n&uacute;mero m&aacute;ximo de consultas en este portal. Favor de intentar nuevamente m&aacute;s tarde.</h1>\n" +
  "            </div>\n        </div>\n    </body>\n</html>\n";

const DOWN_PAGE =
  "<html><head><title>Error 500--Internal Server Error</title></head><body><h2>Error 500--Internal Server Error</h2></body></html>";

function notYetAvailablePage(p: StoredPayment): string {
  const dt = `${p.calendarDate.slice(8, 10)}/${p.calendarDate.slice(5, 7)}/${p.calendarDate.slice(0, 4)} ${p.time}`;
  const message =
    "Lo sentimos, por el momento no es posible generar el CEP. Con la informaci&oacute;n proporcionada se identific&oacute; el siguiente pago:";
  return (
    HEAD +
    '<div class="bg-banxico title-bar">\r\n    <i class="icono-header icon-list"></i>\r\n    Informaci&oacute;n del estado del pago\r\n</div>\r\n' +
    '<div class="cuerpo-msg">\r\n    <div id="consultaMISPEI" style="padding: 15px;box-sizing: border-box;overflow-x: auto;">\r\n' +
    `        <div class="info" style="margin-bottom: 10px;"><center><strong>${message}</strong></center></div>\r\n` +
    '        <br><br>\r\n        <table  id="xxx" class="styled-table vertical" style="margin: auto;">\r\n            <tbody>\r\n' +
    `                <tr><td>N&uacute;mero de Referencia</td><td>${esc(p.reference)}</td></tr>\r\n` +
    `                <tr><td>Clave de Rastreo</td><td>${esc(p.trackingKey)}</td></tr>\r\n` +
    `                <tr><td>Instituci&oacute;n emisora del pago</td><td>${esc(bankName(p.senderBankCode))}</td></tr>\r\n` +
    `                <tr><td>Instituci&oacute;n receptora del pago</td><td>${esc(bankName(p.receiverBankCode))}</td></tr>\r\n` +
    "                <tr><td>Estado del pago en Banxico</td><td>Liquidado</td></tr>\r\n" +
    `                <tr><td>Fecha y hora de recepci&oacute;n</td><td>${dt}</td></tr>\r\n` +
    `                <tr><td>Fecha y hora de procesamiento</td><td>${dt}</td></tr>\r\n` +
    `                <tr class="columna-cuenta"><td>Cuenta Beneficiaria</td><td>${p.beneficiaryAccount}</td></tr>\r\n` +
    `                <tr class="columna-monto"><td>Monto</td><td>${p.amount.toFixed(2)}</td></tr>\r\n` +
    "            </tbody>\r\n        </table>\r\n" +
    '        <div class="aviso-info"><p class="aviso">IMPORTANTE: Esta consulta no es un Comprobante Electr&oacute;nico de Pago (CEP).</p></div>\r\n' +
    "    </div>\r\n</div>\r\n"
  );
}

const FORM_PAGE =
  '<!DOCTYPE html>\n<html lang="es"><head><meta charset="utf-8"><title>Comprobante Electr&oacute;nico de Pago (simulador)</title></head><body>\n' +
  "<h1>COMPROBANTE ELECTR&Oacute;NICO DE PAGO (CEP) &mdash; simulador sandbox</h1>\n" +
  '<form method="POST" action="valida.do">\n' +
  '  <input type="hidden" name="tipoConsulta" value="1"/><input type="hidden" name="captcha" value="c"/>\n' +
  '  <input type="hidden" name="receptorParticipante" value="0"/>\n' +
  '  <label>Fecha de operaci&oacute;n (DD-MM-AAAA) <input name="fecha"/></label><br/>\n' +
  '  <label>Criterio <select name="tipoCriterio"><option value="T">Clave de rastreo</option><option value="R">N&uacute;mero de referencia</option></select></label>\n' +
  '  <input name="criterio"/><br/>\n' +
  '  <label>Instituci&oacute;n emisora <input name="emisor"/></label><br/>\n' +
  '  <label>Instituci&oacute;n receptora <input name="receptor"/></label><br/>\n' +
  '  <label>Cuenta beneficiaria <input name="cuenta"/></label><br/>\n' +
  '  <label>Monto <input name="monto"/></label><br/>\n' +
  '  <button type="submit">Consultar</button>\n</form>\n</body></html>\n';

async function readForm(ctx: Context): Promise<URLSearchParams> {
  const request = ctx.request as Context["request"] & { body?: unknown; rawBody?: unknown };
  if (typeof request.rawBody === "string" && request.rawBody !== "") return new URLSearchParams(request.rawBody);
  const parsed = request.body;
  if (parsed && typeof parsed === "object" && Object.keys(parsed).length > 0) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) params.set(k, String(v));
    return params;
  }
  if (ctx.req.readableEnded) return new URLSearchParams();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > 64 * 1024) ctx.throw(413, "form too large");
    chunks.push(buf);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function parseFormDate(value: string): string | undefined {
  const m = /^(\d{2})[-/](\d{2})[-/](\d{4})$/.exec(value.trim());
  return m ? `${m[3]}-${m[2]}-${m[1]}` : undefined;
}

function sameAmount(value: string, amount: Decimal): boolean {
  try {
    return new Decimal(value.trim().replace(/,/g, "")).equals(amount);
  } catch {
    return false;
  }
}

function tagFor(code: string): string {
  const letters = (findParticipantByCode(code)?.name ?? "SPEI").toUpperCase().replace(/[^A-Z]/g, "");
  return (letters || "SPEI").slice(0, 6);
}

export function createCepPortalSimulator(options: CepPortalSimulatorOptions = {}): CepPortalSimulator {
  const now = options.now ?? (() => new Date());
  const certificate = options.certificateNumber ?? FAKE_CERTIFICATE;
  let mode: CepPortalSimulatorMode = "normal";
  // The payments by upper-cased tracking key and by reference, each list in the order recorded: a query
  // looks its criterion up instead of reading every payment (a bench's thousands made that a few percent
  // of the service's CPU).
  let byTrackingKey = new Map<string, StoredPayment[]>();
  let byReference = new Map<string, StoredPayment[]>();
  const withTrackingKey = (key: string) => byTrackingKey.get(key.toUpperCase()) ?? [];
  function store(payment: StoredPayment): void {
    byTrackingKey.set(payment.trackingKey.toUpperCase(), [...withTrackingKey(payment.trackingKey), payment]);
    byReference.set(payment.reference, [...(byReference.get(payment.reference) ?? []), payment]);
  }
  let sessions = new Map<string, Session>();
  let sequence = 0;
  let saving: Promise<unknown>[] = [];

  const toShared = (p: StoredPayment): SharedSpeiPayment => ({ ...p, operationAt: p.operationAt.toISOString(), amount: p.amount.toFixed(2), availableAfter: p.availableAfter?.toISOString() ?? null });
  const fromShared = (p: SharedSpeiPayment): StoredPayment => ({
    ...p,
    operationAt: new Date(p.operationAt),
    amount: new Decimal(p.amount),
    availableAfter: p.availableAfter === null ? undefined : new Date(p.availableAfter),
  });
  /** Payments another instance recorded: read from the shared store when this one has no match. */
  async function fetchShared(criterio: string): Promise<void> {
    if (!options.shared || !criterio) return;
    for (const found of await options.shared.find(criterio)) {
      if (!withTrackingKey(found.trackingKey).some((p) => p.trackingKey === found.trackingKey)) store(fromShared(found));
    }
  }

  function generateTrackingKey(senderBankCode: string, calendarDate: string): string {
    for (;;) {
      sequence += 1;
      const serial = `${String(sequence).padStart(4, "0")}${randomBytes(4).readUInt32BE(0) % 1_000_000}`.padEnd(10, "0");
      const key = `${tagFor(senderBankCode)}${calendarDate.replace(/-/g, "")}${serial.slice(0, 10)}`;
      if (withTrackingKey(key).length === 0) return key;
    }
  }

  function recordPayment(payment: SimulatedSpeiPayment): { trackingKey: string } {
    if (!(payment.operationAt instanceof Date) || Number.isNaN(payment.operationAt.getTime())) throw new TypeError("operationAt must be a valid Date");
    if (!/^\d{5}$/.test(payment.senderBankCode) || !/^\d{5}$/.test(payment.receiverBankCode)) {
      throw new TypeError("senderBankCode and receiverBankCode must be 5-digit SPEI participant codes");
    }
    if (!/^\d{10,18}$/.test(payment.beneficiaryAccount)) throw new TypeError("beneficiaryAccount must be 10 to 18 digits");
    if (payment.senderAccount !== undefined && !/^\d{10,18}$/.test(payment.senderAccount)) throw new TypeError("senderAccount must be 10 to 18 digits");
    if (!/^\d+(\.\d{1,2})?$/.test(payment.amountMxn)) throw new TypeError("amountMxn must be a decimal with at most 2 decimals");
    if (payment.trackingKey !== undefined && !/^[A-Za-z0-9]{1,30}$/.test(payment.trackingKey)) {
      throw new TypeError("trackingKey must be 1 to 30 letters or digits");
    }
    if (payment.speiOperationDate !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(payment.speiOperationDate)) {
      throw new TypeError("speiOperationDate must be YYYY-MM-DD");
    }
    const { date: calendarDate, time } = mexicoCityDateTime(payment.operationAt);
    const trackingKey = payment.trackingKey ?? generateTrackingKey(payment.senderBankCode, calendarDate);
    sequence += 1;
    const stored: StoredPayment = {
      trackingKey,
      reference: payment.reference ?? String(sequence % 10_000_000),
      operationAt: payment.operationAt,
      calendarDate,
      time,
      speiOperationDate: payment.speiOperationDate ?? defaultOperationDate(calendarDate),
      amount: new Decimal(payment.amountMxn),
      beneficiaryAccount: payment.beneficiaryAccount,
      beneficiaryName: payment.beneficiaryName ?? "BENEFICIARIO SANDBOX",
      beneficiaryRfc: payment.beneficiaryRfc ?? "ND",
      receiverBankCode: payment.receiverBankCode,
      senderBankCode: payment.senderBankCode,
      senderAccount: payment.senderAccount ?? "646180000000000000",
      senderName: payment.senderName ?? "ORDENANTE SANDBOX",
      senderRfc: payment.senderRfc ?? "ND",
      concept: payment.concept ?? "PAGO",
      availableAfter: payment.availableAfter,
    };
    store(stored);
    if (options.shared) {
      const saved = options.shared.save(toShared(stored));
      saved.catch(() => undefined); // reported by flush()
      saving.push(saved);
    }
    return { trackingKey };
  }

  function newSession(ctx: Context): Session {
    const t = now().getTime();
    for (const [id, s] of sessions) if (t - s.touchedAt > SESSION_TTL_MS) sessions.delete(id);
    const id = `${randomBytes(24).toString("base64url")}!${randomBytes(4).readUInt32BE(0)}`;
    const session: Session = { payment: undefined, touchedAt: t };
    sessions.set(id, session);
    ctx.set("Set-Cookie", `JSESSIONID=${id}; path=/; HttpOnly`);
    return session;
  }

  function sessionOf(ctx: Context): Session | undefined {
    const cookie = ctx.get("cookie");
    const m = /(?:^|;\s*)JSESSIONID=([^;]+)/.exec(cookie);
    const session = m?.[1] ? sessions.get(m[1]) : undefined;
    if (!session || now().getTime() - session.touchedAt > SESSION_TTL_MS) return undefined;
    session.touchedAt = now().getTime();
    return session;
  }

  function html(ctx: Context, body: string, status = 200): void {
    ctx.status = status;
    ctx.set("Content-Language", "es-MX");
    ctx.type = "text/html; charset=UTF-8";
    ctx.body = body;
  }

  function findPayment(form: URLSearchParams): StoredPayment | undefined {
    const criterio = (form.get("criterio") ?? "").trim();
    const tipo = (form.get("tipoCriterio") ?? "T").trim().toUpperCase();
    const date = parseFormDate(form.get("fecha") ?? "");
    const emisor = (form.get("emisor") ?? "").trim();
    const receptor = (form.get("receptor") ?? "").trim();
    const cuenta = (form.get("cuenta") ?? "").trim();
    const monto = form.get("monto") ?? "";
    if (!criterio || !date || (tipo !== "T" && tipo !== "R")) return undefined;
    return (tipo === "T" ? withTrackingKey(criterio) : (byReference.get(criterio) ?? [])).find(
      (p) =>
        (p.calendarDate === date || p.speiOperationDate === date) &&
        p.senderBankCode === emisor &&
        p.receiverBankCode === receptor &&
        p.beneficiaryAccount === cuenta &&
        sameAmount(monto, p.amount),
    );
  }

  const router = createRouter<unknown>();

  router.get("/", (ctx) => {
    newSession(ctx);
    html(ctx, FORM_PAGE);
  });

  router.post("/valida.do", async (ctx) => {
    const form = await readForm(ctx);
    if (mode === "down") return html(ctx, DOWN_PAGE, 500);
    const session = newSession(ctx);
    if (mode === "rate_limited") return html(ctx, RATE_LIMITED_PAGE);
    if (!form.get("captcha")) return html(ctx, CAPTCHA_PAGE);
    if (!findPayment(form)) await fetchShared((form.get("criterio") ?? "").trim());
    const payment = findPayment(form);
    if (!payment) return html(ctx, NOT_FOUND_PAGE);
    const consultaCep = (form.get("tipoConsulta") ?? "1") === "1";
    const available = mode !== "not_yet_available" && (!payment.availableAfter || now().getTime() >= payment.availableAfter.getTime());
    if (!available || !consultaCep) return html(ctx, notYetAvailablePage(payment));
    session.payment = payment;
    html(ctx, downloadLinksPage());
  });

  router.get("/descarga.do", (ctx) => {
    if (mode === "down") return html(ctx, DOWN_PAGE, 500);
    if (mode === "rate_limited") return html(ctx, RATE_LIMITED_PAGE);
    const payment = sessionOf(ctx)?.payment;
    if (!payment) return html(ctx, NO_SESSION_PAGE);
    const formato = String(ctx.query.formato ?? "PDF").toUpperCase();
    const base = `CEP-${payment.speiOperationDate.replace(/-/g, "")}-${payment.trackingKey}`;
    const xml = cepXml(payment, certificate);
    ctx.set("Content-Language", "es-MX");
    if (formato === "XML") {
      ctx.type = "application/xml";
      ctx.set("Content-Disposition", `attachment; filename=${base}.xml`);
      ctx.body = mode === "malformed_xml" ? xml.slice(0, Math.floor(xml.length / 2)) : xml;
    } else if (formato === "PDF") {
      ctx.type = "application/pdf";
      ctx.set("Content-Disposition", `attachment; filename=${base}.pdf`);
      ctx.body = cepPdf(payment);
    } else if (formato === "ZIP") {
      ctx.type = "application/zip";
      ctx.set("Content-Disposition", `attachment; filename=${base}.zip`);
      ctx.body = zip([
        { name: `${base}.xml`, data: Buffer.from(xml, "utf8") },
        { name: `${base}.pdf`, data: cepPdf(payment) },
      ]);
    } else {
      html(ctx, errorFragment("Formato no v&aacute;lido.", true));
    }
  });

  return {
    router,
    recordPayment,
    async flush() {
      const pending = saving;
      saving = [];
      await Promise.all(pending);
    },
    setMode(next) {
      mode = next;
    },
    getMode: () => mode,
    reset() {
      byTrackingKey = new Map();
      byReference = new Map();
      sessions = new Map();
      mode = "normal";
    },
  };
}
