// One error class per error code of the API, each with its HTTP status, so a caller can catch exactly
// what it handles: `catch (e) { if (e instanceof QuoteExpiredError) ... }`. The list is the service's
// (test/sdk/types.test.ts fails when a code is missing or its status differs).

/** What the API answered when a call failed: `{ error, message }` with an HTTP status and X-Request-Id. */
export class OfframpApiError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The API's error code (`VALIDATION_ERROR`, `QUOTE_EXPIRED`, ...). */
  readonly code: string;
  /** Any fields of the error body besides `error` and `message`; undefined when there are none. */
  readonly details: Record<string, unknown> | undefined;
  /** The response's X-Request-Id: quote it when asking support about this call. */
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait before the next call (Retry-After), when it said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: { status: number; code: string; message: string; details?: Record<string, unknown>; requestId?: string; retryAfterSeconds?: number }) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

type ErrorInit = ConstructorParameters<typeof OfframpApiError>[0];

function errorClass<Code extends string>(code: Code, status: number) {
  return class extends OfframpApiError {
    static readonly code: Code = code;
    static readonly status: number = status;
    declare readonly code: Code;
    constructor(init: Omit<ErrorInit, "code" | "status"> & { status?: number }) {
      super({ ...init, code, status: init.status ?? status });
    }
  };
}

// Authentication and access
export class MissingApiKeyError extends errorClass("MISSING_API_KEY", 401) {}
export class InvalidApiKeyError extends errorClass("INVALID_API_KEY", 401) {}
export class PartnerInactiveError extends errorClass("PARTNER_INACTIVE", 403) {}
export class PartnerSuspendedError extends errorClass("PARTNER_SUSPENDED", 403) {}
export class IpNotAllowedError extends errorClass("IP_NOT_ALLOWED", 403) {}
export class UnauthorizedError extends errorClass("UNAUTHORIZED", 401) {}
/** The tier's request rate was exceeded: `retryAfterSeconds` says when to call again. */
export class RateLimitedError extends errorClass("RATE_LIMITED", 429) {}
// Input
export class ValidationError extends errorClass("VALIDATION_ERROR", 400) {}
export class NotFoundError extends errorClass("NOT_FOUND", 404) {}
export class IdempotencyKeyReusedError extends errorClass("IDEMPOTENCY_KEY_REUSED", 409) {}
// Users and KYC
export class DuplicateUserError extends errorClass("DUPLICATE_USER", 409) {}
export class UserLimitReachedError extends errorClass("USER_LIMIT_REACHED", 403) {}
export class KycNotAvailableError extends errorClass("KYC_NOT_AVAILABLE", 400) {}
export class KycLimitReachedError extends errorClass("KYC_LIMIT_REACHED", 403) {}
export class KycSessionFailedError extends errorClass("KYC_SESSION_FAILED", 502) {}
export class KycRequiredError extends errorClass("KYC_REQUIRED", 403) {}
export class UserSanctionedError extends errorClass("USER_SANCTIONED", 403) {}
// Quotes, rates and orders
export class RateUnavailableError extends errorClass("RATE_UNAVAILABLE", 502) {}
export class InvalidClabeError extends errorClass("INVALID_CLABE", 400) {}
export class InvalidQuoteError extends errorClass("INVALID_QUOTE", 404) {}
export class QuoteExpiredError extends errorClass("QUOTE_EXPIRED", 410) {}
export class QuoteUsedError extends errorClass("QUOTE_USED", 409) {}
export class QuoteUserMismatchError extends errorClass("QUOTE_USER_MISMATCH", 400) {}
export class VolumeLimitExceededError extends errorClass("VOLUME_LIMIT_EXCEEDED", 403) {}
export class OrderNotCancellableError extends errorClass("ORDER_NOT_CANCELLABLE", 409) {}
export class OrderNotDisputedError extends errorClass("ORDER_NOT_DISPUTED", 409) {}
export class ResolutionPendingError extends errorClass("RESOLUTION_PENDING", 409) {}
export class InvalidStateError extends errorClass("INVALID_STATE", 409) {}
export class InvalidSignatureError extends errorClass("INVALID_SIGNATURE", 401) {}
// Buyer market (the sandbox's lock helper answers them too)
export class OrderNotAvailableError extends errorClass("ORDER_NOT_AVAILABLE", 409) {}
export class BuyerSuspendedError extends errorClass("BUYER_SUSPENDED", 403) {}
export class LockLimitReachedError extends errorClass("LOCK_LIMIT_REACHED", 403) {}
// Partner dashboard
export class InvalidCredentialsError extends errorClass("INVALID_CREDENTIALS", 401) {}
export class CsrfFailedError extends errorClass("CSRF_FAILED", 403) {}
export class ForbiddenError extends errorClass("FORBIDDEN", 403) {}
export class InvitationExpiredError extends errorClass("INVITATION_EXPIRED", 410) {}
export class MemberExistsError extends errorClass("MEMBER_EXISTS", 409) {}
export class LastOwnerError extends errorClass("LAST_OWNER", 409) {}
export class InternalError extends errorClass("INTERNAL_ERROR", 500) {}
/** The database is out of reach for a moment: safe to retry after `Retry-After`. */
export class ServiceUnavailableError extends errorClass("SERVICE_UNAVAILABLE", 503) {}
/** The chain is out of reach after every endpoint and retry: safe to retry after `Retry-After`. */
export class ChainUnavailableError extends errorClass("CHAIN_UNAVAILABLE", 503) {}

/** Every error class by its code. */
export const ERROR_CLASSES = Object.fromEntries(
  [
    MissingApiKeyError, InvalidApiKeyError, PartnerInactiveError, PartnerSuspendedError, IpNotAllowedError, UnauthorizedError, RateLimitedError,
    ValidationError, NotFoundError, IdempotencyKeyReusedError,
    DuplicateUserError, UserLimitReachedError, KycNotAvailableError, KycLimitReachedError, KycSessionFailedError, KycRequiredError, UserSanctionedError,
    RateUnavailableError, InvalidClabeError, InvalidQuoteError, QuoteExpiredError, QuoteUsedError, QuoteUserMismatchError, VolumeLimitExceededError,
    OrderNotCancellableError, OrderNotDisputedError, ResolutionPendingError, InvalidStateError, InvalidSignatureError,
    OrderNotAvailableError, BuyerSuspendedError, LockLimitReachedError,
    InvalidCredentialsError, CsrfFailedError, ForbiddenError, InvitationExpiredError, MemberExistsError, LastOwnerError, InternalError,
    ServiceUnavailableError, ChainUnavailableError,
  ].map((errorClass) => [errorClass.code, errorClass]),
) as Readonly<Record<string, { readonly code: string; readonly status: number; new (init: Omit<ErrorInit, "code" | "status"> & { status?: number }): OfframpApiError }>>;

/**
 * The error for a failed response and its parsed body: the code's own class, or OfframpApiError for a
 * code this SDK does not know yet (or a body that is not the API's, from a proxy in between).
 */
export function errorFromResponse(response: Response, body: unknown): OfframpApiError {
  const { error, message, ...details } = (body !== null && typeof body === "object" ? body : {}) as Record<string, unknown>;
  const retryAfter = Number(response.headers.get("Retry-After") ?? Number.NaN);
  const init = {
    status: response.status,
    message: typeof message === "string" ? message : `HTTP ${response.status}${typeof body === "string" && body ? `: ${body.slice(0, 200)}` : ""}`,
    ...(Object.keys(details).length > 0 ? { details } : {}),
    ...(response.headers.has("X-Request-Id") ? { requestId: response.headers.get("X-Request-Id")! } : {}),
    ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
  };
  const known = typeof error === "string" ? ERROR_CLASSES[error] : undefined;
  return known ? new known(init) : new OfframpApiError({ ...init, code: typeof error === "string" ? error : `HTTP_${response.status}` });
}
