/**
 * KYC provider adapter: Veriff hosted verification sessions.
 *
 * Protocol facts relied on (Veriff Public API v1, devdocs.veriff.com):
 * - Create session: `POST {baseUrl}/v1/sessions`, `Content-Type: application/json`,
 *   `X-AUTH-CLIENT: <integration API key>`; body `{ verification: { callback?, person?, vendorData?, ... } }`
 *   where `callback` is where the end-user's browser is sent when the flow ends
 *   (docs/how-to-generate-sessions-manually, apidocs/v1sessions). `vendorData` is an opaque string of at
 *   most 1,000 characters, returned unchanged in webhooks (troubleshooting codes 1500/1501).
 *   Veriff's rule: POST/PATCH requests are signed with `X-HMAC-SIGNATURE` = hex HMAC-SHA256 of the body
 *   with the integration's shared secret; POST /sessions is the documented exception (signature not
 *   required) - we send it anyway, it is harmless and lets the simulator check it (docs/general-faq,
 *   docs/hmac-authentication-and-endpoint-security).
 * - Success answer (201): `{ status: "success", verification: { id, url, vendorData, host, status: "created",
 *   sessionToken } }`; `verification.id` identifies the session in every webhook, `verification.url` is the
 *   hosted page to redirect the user to.
 * - Failures: 401 with `{ status: "fail", code, message }`, codes 1801 (X-AUTH-CLIENT missing), 1803
 *   (integration not found), 1812/1819 (signature not a hash / does not match the body);
 *   400 with 1102 (mandatory parameters missing), 1104 (invalid parameters)
 *   (docs/credentials-and-authorization-codes-table, docs/some-troubleshooting-codes-table).
 * - Webhooks are POSTed with `X-AUTH-CLIENT` (the integration API key) and `X-HMAC-SIGNATURE` (hex HMAC-SHA256
 *   of the raw body with the shared secret); the receiver recomputes it over the raw bytes.
 * - Decision webhook (docs/decision-webhook): `{ status: "success", verification: { id, attemptId, code,
 *   status, reason, reasonCode, vendorData, decisionTime, acceptanceTime, person: { ..., pepSanctionMatch },
 *   document, riskLabels, ... }, technicalData }`. Codes: 9001 approved, 9102 declined,
 *   9103 resubmission_requested, 9104 expired/abandoned, 9121 review. `resubmission_requested` is not final.
 *   With the PEP & Sanctions add-on, `person.pepSanctionMatch` carries "possible match" / "no match"
 *   (help.veriff.com "PEP and Sanctions check"); it does not say which list matched. `riskLabels` are fraud
 *   signals (e.g. document_integration_level_crosslinked_with_fraud), not PEP/sanctions.
 * - Watchlist-screening webhook (docs/watchlist-screening-webhook, also GET /v1/sessions/{id}/watchlist-screening):
 *   `{ checkType: "initial_result"|"updated_result", attemptId, sessionId, vendorData, endUserId,
 *   matchStatus: "possible_match"|"no_match", searchTerm, totalHits, createdAt, hits: [{ matchedName,
 *   matchTypes, listingsRelatedToMatch: { warnings, sanctions, fitnessProbity, pep, adverseMedia } }] }`,
 *   signed the same way; some payloads nest these fields under `data`.
 *
 * Mapping decisions:
 * - Levels: one Veriff integration per client (one API key + shared secret, as configured by
 *   KYC_PROVIDER_API_KEY/KYC_PROVIDER_SECRET). The level travels in `vendorData` as `"<LEVEL>:<ref>"`
 *   (e.g. `FULL:usr_123`), so every webhook says which level it decides. A deployment that buys two Veriff
 *   integrations (BASIC = document + selfie, FULL = + proof of address + AML screening) creates one client per
 *   integration and picks the client by the webhook's X-AUTH-CLIENT; the vendorData format is the same.
 * - Result: approved -> APPROVED; declined, expired, abandoned -> REJECTED (the session is over without a
 *   verified identity; a new session is needed); resubmission_requested, review and unknown statuses -> PENDING.
 * - PEP/sanctions: decision webhook `person.pepSanctionMatch` "possible match" -> isPep (flag for enhanced due
 *   diligence, never an automatic sanctions block, since the legacy field does not separate the lists).
 *   Watchlist-screening webhook: a hit with `listingsRelatedToMatch.pep` (or a `pep*` match type) -> isPep;
 *   with `listingsRelatedToMatch.sanctions` (or a `sanction*` match type) -> isSanctioned; a possible match
 *   without categories -> isPep. Such a callback has `kind: "screening"` and `result: "PENDING"`: it carries no
 *   verification decision and must only update the flags.
 * - Identity (decisions 8): the decision's `person.firstName` + `person.lastName` is the verified name;
 *   `person.idNumber` (the personal number on a Mexican ID is the CURP) and the Mexican registry checks'
 *   `additionalVerifiedData` (`curp`, `rfc`) give the CURP and the RFC, each taken only when it has the
 *   form of one. The identity is personal data: it is never logged (src/logger.ts lists these fields).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { isCurp, isRfc, normaliseTaxId } from "../domain/payer-identity.ts";

export type KycLevel = "BASIC" | "FULL";
export type KycResult = "APPROVED" | "REJECTED" | "PENDING";

export interface KycProviderClientOptions {
  /** Veriff API URL without the version segment, e.g. https://stationapi.veriff.com */
  baseUrl: string;
  /** Integration API key (X-AUTH-CLIENT). */
  apiKey: string;
  /** Integration shared secret key (HMAC). */
  secret: string;
  /** Per-request timeout for calls to the provider. */
  timeoutMs: number;
  fetch?: typeof fetch;
}

export interface CreateKycSessionInput {
  userId: string;
  level: KycLevel;
  /** Absolute http(s) URL the user's browser returns to after the hosted flow. */
  returnUrl: string;
  /** Opaque reference echoed back in callbacks; defaults to userId. */
  vendorData?: string;
}

export interface KycSession {
  sessionId: string;
  sessionUrl: string;
}

export interface KycDecision {
  /** "decision": Veriff decision webhook; "screening": watchlist-screening webhook (flags only, result PENDING). */
  kind: "decision" | "screening";
  sessionId: string;
  result: KycResult;
  level?: KycLevel;
  /** The reference given at session creation (without the level prefix); null when Veriff sent none. */
  vendorData: string | null;
  decidedAt: Date;
  isPep: boolean;
  isSanctioned: boolean;
  reason?: string;
  /** The verified identity of an APPROVED decision: the name, and the CURP and RFC when verified (FULL). */
  identity?: { name: string | null; curp: string | null; rfc: string | null };
}

export type KycHeaders = Record<string, string | string[] | undefined>;

export interface KycProviderClient {
  createSession(input: CreateKycSessionInput): Promise<KycSession>;
  verifyDecisionCallback(rawBody: Buffer | string, headers: KycHeaders): KycDecision;
}

export type KycProviderErrorCode = "PROVIDER_ERROR" | "TIMEOUT" | "NETWORK_ERROR" | "BAD_RESPONSE";

/** The provider could not create a session. `message` is safe to log; it never holds credentials or bodies. */
export class KycProviderError extends Error {
  override readonly name = "KycProviderError";
  /** Provider HTTP status when it answered with an error; 504 on timeout; 502 on network error or bad body. */
  readonly status: number;
  readonly code: KycProviderErrorCode;
  /** Veriff's own error code (e.g. "1803") when the error body carried one. */
  readonly providerCode: string | undefined;

  constructor(message: string, status: number, code: KycProviderErrorCode, providerCode?: string, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.providerCode = providerCode;
  }
}

/** Missing or wrong X-HMAC-SIGNATURE, or an X-AUTH-CLIENT that is not ours. Answer 401; change nothing. */
export class KycCallbackSignatureError extends Error {
  override readonly name = "KycCallbackSignatureError";
  readonly status = 401;
}

/** Correctly signed callback whose body is not a Veriff decision or watchlist-screening payload. Answer 400. */
export class KycCallbackPayloadError extends Error {
  override readonly name = "KycCallbackPayloadError";
  readonly status = 400;
}

const LEVELS: readonly KycLevel[] = ["BASIC", "FULL"];
const VENDOR_DATA_MAX = 1000;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

export function encodeVendorData(level: KycLevel, ref: string): string {
  return `${level}:${ref}`;
}

export function decodeVendorData(wire: string | null): { level?: KycLevel; vendorData: string | null } {
  if (wire === null) return { vendorData: null };
  const sep = wire.indexOf(":");
  const prefix = sep > 0 ? wire.slice(0, sep) : "";
  if ((LEVELS as readonly string[]).includes(prefix)) {
    return { level: prefix as KycLevel, vendorData: wire.slice(sep + 1) };
  }
  return { vendorData: wire };
}

function hmacHex(secret: string, body: Buffer | string): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function headerValue(headers: KycHeaders, name: string): string | undefined {
  const wanted = name.toLowerCase();
  let found: string | undefined;
  let count = 0;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) {
      found = v;
      count += 1;
    }
  }
  // A repeated header is ambiguous: refuse it rather than pick one.
  return count === 1 ? found : undefined;
}

/** Constant-time equality of two strings of possibly different lengths. */
function safeEqualStrings(a: string, b: string): boolean {
  const ab = Buffer.from(a, "utf8");
  const bb = Buffer.from(b, "utf8");
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

function parseAbsoluteHttpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}

function mapDecisionStatus(status: unknown, code: unknown): KycResult {
  switch (status) {
    case "approved":
      return "APPROVED";
    case "declined":
    case "expired":
    case "abandoned":
      return "REJECTED";
    case "resubmission_requested":
    case "review":
    case "submitted":
    case "started":
    case "created":
      return "PENDING";
    default:
      break;
  }
  switch (code) {
    case 9001:
      return "APPROVED";
    case 9102:
    case 9104:
      return "REJECTED";
    default:
      return "PENDING";
  }
}

function parseTime(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new KycCallbackPayloadError(`${field} is not a string`);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new KycCallbackPayloadError(`${field} is not a valid timestamp`);
  return date;
}

function optionalString(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new KycCallbackPayloadError(`${field} is not a string`);
  return value;
}

function requiredId(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > 200) {
    throw new KycCallbackPayloadError(`${field} is missing`);
  }
  return value;
}

function parseDecisionWebhook(verification: Record<string, unknown>): KycDecision {
  const sessionId = requiredId(verification.id, "verification.id");
  const { status, code } = verification;
  if (status === undefined && code === undefined) {
    throw new KycCallbackPayloadError("verification.status is missing");
  }
  if (status !== undefined && typeof status !== "string") {
    throw new KycCallbackPayloadError("verification.status is not a string");
  }
  if (code !== undefined && code !== null && typeof code !== "number") {
    throw new KycCallbackPayloadError("verification.code is not a number");
  }
  const { level, vendorData } = decodeVendorData(optionalString(verification.vendorData, "verification.vendorData"));
  const decidedAt =
    parseTime(verification.decisionTime, "verification.decisionTime") ??
    parseTime(verification.acceptanceTime, "verification.acceptanceTime") ??
    new Date();
  const person = isRecord(verification.person) ? verification.person : {};
  const pepMatch = person.pepSanctionMatch;
  const isPep = typeof pepMatch === "string" && /possible[ _]?match|^match$/i.test(pepMatch.trim());
  const reason = optionalString(verification.reason, "verification.reason");
  const decision: KycDecision = {
    kind: "decision",
    sessionId,
    result: mapDecisionStatus(status, code),
    vendorData,
    decidedAt,
    isPep,
    isSanctioned: false,
  };
  if (level !== undefined) decision.level = level;
  if (reason !== null && reason.length > 0) decision.reason = reason;
  const identity = verifiedIdentity(person, isRecord(verification.additionalVerifiedData) ? verification.additionalVerifiedData : {});
  if (identity) decision.identity = identity;
  return decision;
}

/** The name, CURP and RFC a decision verified; undefined when it names nobody. */
function verifiedIdentity(person: Record<string, unknown>, extra: Record<string, unknown>): KycDecision["identity"] {
  const text = (value: unknown) => (typeof value === "string" && value.trim() !== "" && value.length <= 200 ? value.trim() : null);
  const ids = [person.idNumber, extra.curp, extra.rfc].map((value) => normaliseTaxId(text(value))).filter((id): id is string => id !== null);
  const name = [text(person.firstName), text(person.lastName)].filter((part) => part !== null).join(" ") || null;
  const curp = ids.find(isCurp) ?? null;
  const rfc = ids.find(isRfc) ?? null;
  return name || curp || rfc ? { name, curp, rfc } : undefined;
}

function nonEmptyArray(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

function parseScreeningWebhook(data: Record<string, unknown>): KycDecision {
  const sessionId = requiredId(data.sessionId, "sessionId");
  const matchStatus = data.matchStatus;
  if (matchStatus !== "possible_match" && matchStatus !== "no_match") {
    throw new KycCallbackPayloadError("matchStatus is not possible_match or no_match");
  }
  const hits = data.hits ?? [];
  if (!Array.isArray(hits)) throw new KycCallbackPayloadError("hits is not an array");
  let isPep = false;
  let isSanctioned = false;
  if (matchStatus === "possible_match") {
    for (const hit of hits) {
      if (!isRecord(hit)) continue;
      const listings = isRecord(hit.listingsRelatedToMatch) ? hit.listingsRelatedToMatch : {};
      const matchTypes = Array.isArray(hit.matchTypes) ? hit.matchTypes.filter((t) => typeof t === "string") : [];
      if (nonEmptyArray(listings.pep) || matchTypes.some((t) => /^pep/i.test(t))) isPep = true;
      if (nonEmptyArray(listings.sanctions) || matchTypes.some((t) => /sanction/i.test(t))) isSanctioned = true;
    }
    // A possible match that names no list still needs a human look: flag it for enhanced due diligence.
    if (!isPep && !isSanctioned) isPep = true;
  }
  const { level, vendorData } = decodeVendorData(optionalString(data.vendorData, "vendorData"));
  const decision: KycDecision = {
    kind: "screening",
    sessionId,
    result: "PENDING",
    vendorData,
    decidedAt: parseTime(data.createdAt, "createdAt") ?? new Date(),
    isPep,
    isSanctioned,
  };
  if (level !== undefined) decision.level = level;
  return decision;
}

async function readErrorBody(res: Response): Promise<string | undefined> {
  try {
    const body: unknown = await res.json();
    if (isRecord(body) && (typeof body.code === "string" || typeof body.code === "number")) return String(body.code);
  } catch {
    // Error bodies are informative only.
  }
  return undefined;
}

export function createKycProviderClient(options: KycProviderClientOptions): KycProviderClient {
  const { apiKey, secret, timeoutMs } = options;
  if (!apiKey || !secret) throw new TypeError("KYC provider apiKey and secret are required");
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new TypeError("KYC provider timeoutMs must be positive");
  const base = parseAbsoluteHttpUrl(options.baseUrl);
  if (!base) throw new TypeError("KYC provider baseUrl must be an absolute http(s) URL");
  const sessionsUrl = `${base.href.replace(/\/+$/, "")}/v1/sessions`;
  const doFetch = options.fetch ?? globalThis.fetch;

  async function createSession(input: CreateKycSessionInput): Promise<KycSession> {
    if (!LEVELS.includes(input.level)) throw new TypeError("level must be BASIC or FULL");
    if (typeof input.userId !== "string" || input.userId.length === 0) throw new TypeError("userId is required");
    if (!parseAbsoluteHttpUrl(input.returnUrl)) throw new TypeError("returnUrl must be an absolute http(s) URL");
    const vendorData = encodeVendorData(input.level, input.vendorData ?? input.userId);
    if (vendorData.length > VENDOR_DATA_MAX) throw new TypeError("vendorData is too long for the provider");

    const body = JSON.stringify({ verification: { callback: input.returnUrl, vendorData } });
    let res: Response;
    try {
      res = await doFetch(sessionsUrl, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json",
          "X-AUTH-CLIENT": apiKey,
          "X-HMAC-SIGNATURE": hmacHex(secret, body),
        },
        body,
        redirect: "error",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const name = err instanceof Error ? err.name : "";
      if (name === "TimeoutError" || name === "AbortError") {
        throw new KycProviderError(`KYC provider did not answer within ${timeoutMs} ms`, 504, "TIMEOUT", undefined, {
          cause: err,
        });
      }
      throw new KycProviderError("KYC provider could not be reached", 502, "NETWORK_ERROR", undefined, { cause: err });
    }

    if (!res.ok) {
      const providerCode = await readErrorBody(res);
      const suffix = providerCode ? ` (provider code ${providerCode})` : "";
      throw new KycProviderError(`KYC provider answered HTTP ${res.status}${suffix}`, res.status, "PROVIDER_ERROR", providerCode);
    }

    let payload: unknown;
    try {
      payload = await res.json();
    } catch (err) {
      throw new KycProviderError("KYC provider answered with a body that is not JSON", 502, "BAD_RESPONSE", undefined, {
        cause: err,
      });
    }
    const verification = isRecord(payload) && payload.status === "success" ? payload.verification : undefined;
    const id = isRecord(verification) ? verification.id : undefined;
    const url = isRecord(verification) && typeof verification.url === "string" ? verification.url : undefined;
    if (typeof id !== "string" || id.length === 0 || id.length > 200 || !url || !parseAbsoluteHttpUrl(url)) {
      throw new KycProviderError("KYC provider answered with an unexpected session body", 502, "BAD_RESPONSE");
    }
    return { sessionId: id, sessionUrl: url };
  }

  function verifyDecisionCallback(rawBody: Buffer | string, headers: KycHeaders): KycDecision {
    const raw = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody;
    if (!Buffer.isBuffer(raw)) throw new KycCallbackSignatureError("callback body must be the raw bytes");
    const client = headerValue(headers, "x-auth-client");
    const signature = headerValue(headers, "x-hmac-signature");
    const clientOk = client !== undefined && safeEqualStrings(client, apiKey);
    let signatureOk = false;
    if (signature !== undefined && HEX_SHA256.test(signature)) {
      const expected = createHmac("sha256", secret).update(raw).digest();
      signatureOk = timingSafeEqual(Buffer.from(signature, "hex"), expected);
    }
    if (!clientOk || !signatureOk) {
      throw new KycCallbackSignatureError(
        client === undefined || signature === undefined
          ? "callback is not signed"
          : "callback signature or client key does not match",
      );
    }

    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new KycCallbackPayloadError("callback body is not JSON");
    }
    if (!isRecord(payload)) throw new KycCallbackPayloadError("callback body is not an object");
    if (isRecord(payload.verification)) return parseDecisionWebhook(payload.verification);
    if (typeof payload.matchStatus === "string" || typeof payload.checkType === "string") {
      return parseScreeningWebhook(payload);
    }
    if (isRecord(payload.data) && (typeof payload.data.matchStatus === "string" || typeof payload.data.checkType === "string")) {
      return parseScreeningWebhook(payload.data);
    }
    throw new KycCallbackPayloadError("callback is neither a decision nor a watchlist-screening webhook");
  }

  return { createSession, verifyDecisionCallback };
}
