import { OfframpError, STATUS_BY_CODE } from "../domain/errors.ts";

// The market's own error codes (decisions 17), in the one `{ error, message }` shape of http/errors.ts.

STATUS_BY_CODE.ORDER_NOT_AVAILABLE = 409;
STATUS_BY_CODE.BUYER_SUSPENDED = 403;
STATUS_BY_CODE.LOCK_LIMIT_REACHED = 403;

/** The order cannot be locked: not ACTIVE, its listing expired, or the buyer is its seller. */
export class OrderNotAvailableError extends OfframpError {
  readonly code = "ORDER_NOT_AVAILABLE";
  readonly status = 409;
  constructor(message = "The order is not available to lock") {
    super(message);
    this.name = this.code;
  }
}

export class BuyerSuspendedError extends OfframpError {
  readonly code = "BUYER_SUSPENDED";
  readonly status = 403;
  constructor(message = "The buyer is suspended") {
    super(message);
    this.name = this.code;
  }
}

export class LockLimitReachedError extends OfframpError {
  readonly code = "LOCK_LIMIT_REACHED";
  readonly status = 403;
  constructor(message = "The buyer holds as many locks as allowed") {
    super(message);
    this.name = this.code;
  }
}
