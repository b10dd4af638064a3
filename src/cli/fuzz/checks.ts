// What every answer must satisfy: no 5xx, the error shape `{ error, message }` with a code of the spec
// at that code's status, an X-Request-Id; and, for requests that must be refused, no 2xx.
import type { RawResponse } from "./http.ts";

/**
 * The error codes of the spec (offramp-api.md, Errors) and of decisions sections 11 and 12, with their
 * status. Codes the OpenAPI documents declare are added to these at run time (with their documented status).
 */
export const SPEC_CODES: Record<string, number> = {
  MISSING_API_KEY: 401,
  INVALID_API_KEY: 401,
  PARTNER_INACTIVE: 403,
  PARTNER_SUSPENDED: 403,
  IP_NOT_ALLOWED: 403,
  RATE_LIMITED: 429,
  VALIDATION_ERROR: 400,
  INVALID_CLABE: 400,
  INVALID_QUOTE: 404,
  QUOTE_EXPIRED: 410,
  QUOTE_USED: 409,
  QUOTE_USER_MISMATCH: 400,
  NOT_FOUND: 404,
  DUPLICATE_USER: 409,
  USER_LIMIT_REACHED: 403,
  VOLUME_LIMIT_EXCEEDED: 403,
  KYC_NOT_AVAILABLE: 400,
  KYC_LIMIT_REACHED: 403,
  KYC_SESSION_FAILED: 502,
  KYC_REQUIRED: 403,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  ORDER_NOT_CANCELLABLE: 409,
  USER_SANCTIONED: 403,
  RATE_UNAVAILABLE: 502,
  IDEMPOTENCY_KEY_REUSED: 409,
  UNAUTHORIZED: 401,
  ORDER_NOT_DISPUTED: 409,
};

export type ViolationKind =
  | "5xx"
  | "no response"
  | "error shape"
  | "unknown error code"
  | "status does not match code"
  | "missing X-Request-Id"
  | "missing rate-limit headers"
  | "auth bypass"
  | "cross-tenant access"
  | "cross-tenant leak"
  | "invalid input accepted"
  | "data changed by refused request"
  | "concurrency"
  | "document";

export interface Violation {
  kind: ViolationKind;
  detail: string;
  /** A one-line reproduction of the request (method, path, some headers, start of body). */
  request?: string;
  status?: number;
  body?: string;
}

export interface Verdict {
  violations: Violation[];
  /** The error code answered, if any. */
  code?: string;
  /** Refused by Node's HTTP parser before the service saw it (431 header too large, 400 bad request). */
  parserRefusal: boolean;
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

export function checkResponse(response: RawResponse, options: { codes: Record<string, number>; head: boolean; rateLimitHeaders: boolean }): Verdict {
  const violations: Violation[] = [];
  const text = response.body.toString("utf8").slice(0, 300);
  if (response.transportError) return { violations: [{ kind: "no response", detail: response.transportError }], parserRefusal: false };
  const status = response.status;
  const fromService = response.headers["x-request-id"] !== undefined;
  // Node answers some malformed requests itself (431 header too large, 400 bad request), closing the
  // connection with an empty body: the service never saw them, so there is nothing of its to check.
  if (!fromService && status >= 400 && status < 500 && response.body.length === 0) return { violations, parserRefusal: true };
  if (status >= 500) violations.push({ kind: "5xx", detail: `status ${status}`, status, body: text });
  if (!fromService) violations.push({ kind: "missing X-Request-Id", detail: `status ${status} without X-Request-Id`, status, body: text });
  if (options.rateLimitHeaders && fromService && !["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"].every((name) => name in response.headers)) {
    violations.push({ kind: "missing rate-limit headers", detail: `status ${status} without X-RateLimit-*`, status, body: text });
  }
  let code: string | undefined;
  if (status >= 300 && !options.head) {
    const body = parseJson(response.body);
    const ok =
      body !== null &&
      typeof body === "object" &&
      !Array.isArray(body) &&
      typeof (body as Record<string, unknown>).error === "string" &&
      typeof (body as Record<string, unknown>).message === "string" &&
      Object.keys(body).length === 2;
    if (!ok) {
      violations.push({ kind: "error shape", detail: `status ${status}, content-type ${response.headers["content-type"] ?? "none"}`, status, body: text });
    } else {
      code = (body as { error: string }).error;
      const expected = options.codes[code];
      if (expected === undefined) violations.push({ kind: "unknown error code", detail: `${code} (status ${status})`, status, body: text });
      else if (expected !== status) violations.push({ kind: "status does not match code", detail: `${code} answered ${status}, its status is ${expected}`, status, body: text });
    }
  }
  return { violations, code, parserRefusal: false };
}
