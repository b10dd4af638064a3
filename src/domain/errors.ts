// One error class per code of the spec (and of decisions section 11), each with its HTTP status.
// They are thrown anywhere in the domain and turned into `{ error, message }` in one place (http/errors.ts).

export abstract class OfframpError extends Error {
  abstract readonly code: string;
  abstract readonly status: number;
  /** Extra response headers (Retry-After on 429). */
  headers: Record<string, string> = {};
}

/** Every code's HTTP status, filled as the classes below are defined (used by the OpenAPI document). */
export const STATUS_BY_CODE: Record<string, number> = {};

function errorClass<Code extends string>(code: Code, status: number, defaultMessage: string) {
  STATUS_BY_CODE[code] = status;
  return class extends OfframpError {
    readonly code: Code = code;
    readonly status: number = status;
    constructor(message: string = defaultMessage) {
      super(message);
      this.name = code;
    }
  };
}

// Authentication and access
export const MissingApiKeyError = errorClass("MISSING_API_KEY", 401, "The X-API-Key header is required");
export const InvalidApiKeyError = errorClass("INVALID_API_KEY", 401, "The API key matches no active partner");
export const PartnerInactiveError = errorClass("PARTNER_INACTIVE", 403, "The partner account is not active");
export const PartnerSuspendedError = errorClass("PARTNER_SUSPENDED", 403, "The partner's KYB status is suspended");
export const IpNotAllowedError = errorClass("IP_NOT_ALLOWED", 403, "The client address is not on the partner's allow-list");
export const UnauthorizedError = errorClass("UNAUTHORIZED", 401, "A valid admin bearer token is required");

export class RateLimitedError extends errorClass("RATE_LIMITED", 429, "Request rate exceeded for the tier") {
  constructor(retryAfterSeconds: number) {
    super(`Request rate exceeded for the tier; retry after ${retryAfterSeconds} s`);
    this.headers = { "Retry-After": String(retryAfterSeconds) };
  }
}

// Input
export class ValidationError extends errorClass("VALIDATION_ERROR", 400, "The request is invalid") {}
export const NotFoundError = errorClass("NOT_FOUND", 404, "The resource does not exist");
export const IdempotencyKeyReusedError = errorClass(
  "IDEMPOTENCY_KEY_REUSED",
  409,
  "This Idempotency-Key was already used with a different request",
);

// Users and KYC
export const DuplicateUserError = errorClass("DUPLICATE_USER", 409, "A user with this partnerUserRef already exists");
export const UserLimitReachedError = errorClass("USER_LIMIT_REACHED", 403, "The tier's maximum number of users is reached");
export const KycNotAvailableError = errorClass("KYC_NOT_AVAILABLE", 400, "The partner uses PARTNER_MANAGED KYC");
export const KycLimitReachedError = errorClass("KYC_LIMIT_REACHED", 403, "The tier's monthly KYC verification limit is reached");
export const KycSessionFailedError = errorClass("KYC_SESSION_FAILED", 502, "The KYC provider returned an error");
export const KycRequiredError = errorClass("KYC_REQUIRED", 403, "The user must complete KYC before the next order");
export const UserSanctionedError = errorClass("USER_SANCTIONED", 403, "The user matches a sanctions list");

// Quotes, rates and orders
export const RateUnavailableError = errorClass("RATE_UNAVAILABLE", 502, "No usable exchange rate is available");
export const InvalidClabeError = errorClass("INVALID_CLABE", 400, "The CLABE fails validation");
export const InvalidQuoteError = errorClass("INVALID_QUOTE", 404, "The quote does not exist");
export const QuoteExpiredError = errorClass("QUOTE_EXPIRED", 410, "The quote has expired");
export const QuoteUsedError = errorClass("QUOTE_USED", 409, "The quote was already used for an order");
export const QuoteUserMismatchError = errorClass("QUOTE_USER_MISMATCH", 400, "partnerUserRef differs from the quote's user");
export const VolumeLimitExceededError = errorClass("VOLUME_LIMIT_EXCEEDED", 403, "The tier's volume limit would be exceeded");
export const OrderNotCancellableError = errorClass("ORDER_NOT_CANCELLABLE", 409, "The order can no longer be cancelled");
export const OrderNotDisputedError = errorClass("ORDER_NOT_DISPUTED", 409, "The order is not disputed");
export const ResolutionPendingError = errorClass("RESOLUTION_PENDING", 409, "A different resolution of this dispute is already on its way");
export const InvalidStateError = errorClass("INVALID_STATE", 409, "The order is not in a state that allows this action");
// A signature that is not the wallet's: a payment report not signed by the wallet that locked the order
// (docs/payments.md), or a market sign-in (decisions 17, which fixes the status: 401). One code, one status.
export const InvalidSignatureError = errorClass("INVALID_SIGNATURE", 401, "The signature is not the wallet's");

// Partner dashboard (decisions section 18)
export const InvalidCredentialsError = errorClass("INVALID_CREDENTIALS", 401, "The email or password is wrong");
export const CsrfFailedError = errorClass("CSRF_FAILED", 403, "The X-CSRF-Token header is missing or does not match the session");
export const ForbiddenError = errorClass("FORBIDDEN", 403, "The member's role does not allow this");
export const InvitationExpiredError = errorClass("INVITATION_EXPIRED", 410, "The invitation has expired");
export const MemberExistsError = errorClass("MEMBER_EXISTS", 409, "A member with this email already exists");
export const LastOwnerError = errorClass("LAST_OWNER", 409, "The partner's last OWNER can be neither demoted nor removed");

/** Every RPC endpoint refused or failed, after retries (decisions 7): the request may be repeated shortly. */
export class ChainUnavailableError extends errorClass("CHAIN_UNAVAILABLE", 503, "The chain cannot be reached right now; retry shortly") {
  constructor(retryAfterSeconds = 5) {
    super(`The chain cannot be reached right now; retry after ${retryAfterSeconds} s`);
    this.headers = { "Retry-After": String(retryAfterSeconds) };
  }
}

export const InternalError = errorClass("INTERNAL_ERROR", 500, "An unexpected error occurred");

/** What the request needs is out of reach for now (no database session within the pool's wait): retry after a moment. */
export class ServiceUnavailableError extends errorClass("SERVICE_UNAVAILABLE", 503, "The service is temporarily unavailable; retry later") {
  constructor(message?: string, retryAfterSeconds = 2) {
    super(message);
    this.headers = { "Retry-After": String(retryAfterSeconds) };
  }
}

// Internal errors (never answered to a client as such), told apart by whether a retry can help, in
// Ponder's RetryableError / NonRetryableError style: the job handlers decide by them (src/jobs/retry.ts).

/** A later attempt can get past it: the chain has not reached a deadline yet, a node or portal is not answering. */
export class RetryableError extends Error {
  readonly retryable = true;
}

/** No retry can help: data that will never be valid, a broken invariant. */
export class PermanentError extends Error {
  readonly retryable = false;
}

/**
 * Whether a retry can help. Marked errors say so; any other error (a dropped database connection, a
 * timeout, a bug fixed by a deploy) is presumed transient, so a crashed or failing job keeps its
 * retries and no effect is lost.
 */
export function isRetryable(error: unknown): boolean {
  return !(error instanceof PermanentError);
}

