import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import type { ApiResponse, TestService } from "../support/service.ts";

export interface UserDetail {
  id: string;
  partnerUserRef: string;
  kycStatus: string;
  kycTier: string;
  kycCompletedAt: string | null;
  isPep: boolean;
  isSanctioned: boolean;
  updatedAt: string;
  [field: string]: unknown;
}

export interface Session {
  sessionId: string;
  sessionUrl: string;
}

export interface ErrorBody {
  error: string;
  message: string;
}

export const RETURN_URL = "https://partner.example/kyc/done";

export async function servicePartner(service: TestService, fields: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const partner = await service.createPartner({ kycModel: "SERVICE_PROVIDED", ...fields });
  return { id: partner.id, key: partner.apiKey };
}

export async function createUser(service: TestService, key: string, ref = `user-${randomUUID()}`, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await service.api("POST", "/users", { key, body: { partnerUserRef: ref, ...extra } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return ref;
}

export async function userDetail(service: TestService, key: string, ref: string): Promise<UserDetail> {
  const response = await service.api<UserDetail>("GET", `/users/${encodeURIComponent(ref)}`, { key });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

export function requestSession(
  service: TestService,
  key: string,
  ref: string,
  body: unknown = { level: "BASIC", returnUrl: RETURN_URL },
  headers: Record<string, string> = {},
): Promise<ApiResponse<Session & ErrorBody>> {
  return service.api<Session & ErrorBody>("POST", `/users/${encodeURIComponent(ref)}/kyc`, { key, body, headers });
}

export async function startSession(service: TestService, key: string, ref: string, level: "BASIC" | "FULL" = "BASIC", returnUrl = RETURN_URL): Promise<Session> {
  const response = await requestSession(service, key, ref, { level, returnUrl });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return { sessionId: response.body.sessionId, sessionUrl: response.body.sessionUrl };
}

export async function sandboxDecide(
  service: TestService,
  key: string,
  sessionId: string,
  result: "APPROVED" | "REJECTED",
  extra: Record<string, unknown> = {},
): Promise<ApiResponse<UserDetail & ErrorBody>> {
  return service.api<UserDetail & ErrorBody>("POST", `/sandbox/kyc/${encodeURIComponent(sessionId)}/decision`, { key, body: { result, ...extra } });
}

export async function decide(service: TestService, key: string, sessionId: string, result: "APPROVED" | "REJECTED", extra: Record<string, unknown> = {}): Promise<UserDetail> {
  const response = await sandboxDecide(service, key, sessionId, result, extra);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

export function assertError(response: ApiResponse<unknown>, status: number, code: string): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  const body = response.body as ErrorBody;
  assert.equal(body.error, code);
  assert.equal(typeof body.message, "string");
  assert.deepEqual(Object.keys(body).sort(), ["error", "message"]);
}

/** A Veriff decision webhook body, as the provider sends it. */
export function veriffDecision(
  sessionId: string,
  status: "approved" | "declined",
  options: { vendorData?: string; decisionTime?: string; pepSanctionMatch?: string | null; spacing?: number } = {},
): string {
  const payload = {
    status: "success",
    verification: {
      id: sessionId,
      attemptId: randomUUID(),
      vendorData: options.vendorData ?? null,
      status,
      code: status === "approved" ? 9001 : 9102,
      reason: status === "approved" ? null : "Document expired",
      decisionTime: options.decisionTime ?? new Date().toISOString(),
      person: { firstName: "José", lastName: "Muñoz", pepSanctionMatch: options.pepSanctionMatch ?? null },
    },
    technicalData: { ip: null },
  };
  return JSON.stringify(payload, null, options.spacing);
}

/** A Veriff watchlist-screening webhook body. */
export function veriffScreening(sessionId: string, lists: { pep?: boolean; sanctions?: boolean }): string {
  const listing = [{ sourceName: "list", sourceUrl: "https://lists.example", date: null }];
  const hit = lists.pep || lists.sanctions;
  return JSON.stringify({
    checkType: "updated_result",
    attemptId: randomUUID(),
    sessionId,
    vendorData: null,
    matchStatus: hit ? "possible_match" : "no_match",
    totalHits: hit ? 1 : 0,
    createdAt: new Date().toISOString(),
    hits: hit
      ? [{ matchedName: "X", matchTypes: ["name_exact"], listingsRelatedToMatch: { pep: lists.pep ? listing : [], sanctions: lists.sanctions ? listing : [] } }]
      : [],
  });
}

/** The KYC provider credentials the sandbox generated for the service's DATA_DIR. */
export function kycCredentials(service: TestService): { apiKey: string; secret: string } {
  const secrets = service.sandboxSecrets;
  assert.ok(secrets, "the service runs in sandbox");
  return { apiKey: secrets.kycApiKey, secret: secrets.kycSecret };
}

export function sign(body: string | Buffer, secret: string): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

/** POSTs a callback to the service exactly as given (raw bytes, chosen headers). */
export async function postCallback(service: TestService, body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${service.baseUrl}/callbacks/kyc`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : new Uint8Array(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

/** POSTs a callback signed as the provider signs it (X-AUTH-CLIENT + X-HMAC-SIGNATURE over the raw body). */
export function postSignedCallback(service: TestService, body: string | Buffer): Promise<{ status: number; body: unknown }> {
  const { apiKey, secret } = kycCredentials(service);
  return postCallback(service, body, { "X-AUTH-CLIENT": apiKey, "X-HMAC-SIGNATURE": sign(body, secret) });
}

export interface UsageView {
  month: string;
  includedPerMonth: number;
  capPerMonth: number | null;
  sessions: { id: string; sessionId: string; partnerUserRef: string; level: string; status: string; billed: boolean; priceUsd: number }[];
  counts: { total: number; BASIC: number; FULL: number };
  included: number;
  billed: number;
  billedAmountUsd: number;
  failedAttempts: number;
}

export async function usage(service: TestService, partnerId: string, month?: string): Promise<UsageView> {
  const response = await service.admin<UsageView>("GET", `/partners/${partnerId}/kyc-usage${month ? `?month=${month}` : ""}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}
