import type { Pool } from "../db/pool.ts";
import { InvalidStateError } from "../domain/errors.ts";
import type { KycLevel } from "../domain/kyc.ts";
import { bearerToken } from "../http/context.ts";
import { checkReturnUrl, kycSessionBodySchema } from "../kyc/routes.ts";
import type { RouteGroup } from "../http/routes.ts";
import { isoTimestamp, pagination } from "../http/schema.ts";
import { buyerViewSchema, kycSessionStartedSchema, lockPermitSchema, orderBookPageSchema, tradeDetailSchema, tradePaymentAnswerSchema, tradesPageSchema } from "./market-schema.ts";
import type { KycProviderClient } from "../integrations/kyc-provider.ts";
import type { Logger } from "../logger.ts";
import type { OrderStatus } from "../orders/machine.ts";
import type { OrderEffectPorts } from "../orders/store.ts";
import { reportPayment, resolveSenderBank } from "../payments/report.ts";
import { paymentReportBody } from "../payments/routes.ts";
import { closeSession, currentBuyer, issueChallenge, openSession, type SignInDeps } from "./auth.ts";
import { buyerStanding, buyerView, ensureBuyer, type BuyerPolicy } from "./buyers.ts";
import { startBuyerKycSession } from "./kyc.ts";
import { readReputations, sharedOrderBookReads } from "./order-book.ts";
import type { PermitIssuer } from "./permits.ts";
import { getTradeRow, listTrades, tradeDetail, TRADE_STATUSES } from "./trades.ts";

export const MARKET_PREFIX = "/market/v1";
/** Sign-in requests (challenges and sessions) per client address per minute. */
export const MARKET_AUTH_REQUESTS_PER_MINUTE = 60;
/** Order book requests (public, no token) per client address per minute. */
export const MARKET_BOOK_REQUESTS_PER_MINUTE = 120;

const WALLET = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$", description: "0x-prefixed 20-byte hex address" } as const;

export interface MarketRouteDeps {
  pool: Pool;
  logger: Logger;
  sandbox: boolean;
  policy: BuyerPolicy;
  signIn: SignInDeps;
  issuePermit: PermitIssuer;
  ports: OrderEffectPorts;
  kycProvider: Pick<KycProviderClient, "createSession">;
  indexerSchema: string | undefined;
}

/** The buyer as `GET /market/v1/me` shows it. */
export async function buyerProfile(deps: Pick<MarketRouteDeps, "pool" | "policy" | "indexerSchema">, wallet: string) {
  const buyer = await ensureBuyer(deps.pool, deps.policy, wallet);
  const [standing, reputations] = await Promise.all([buyerStanding(deps.pool, deps.policy, buyer), readReputations(deps.pool, deps.indexerSchema, [buyer.wallet])]);
  return buyerView(buyer, standing, reputations.get(buyer.wallet) ?? 0);
}

/** Decisions 17: sign-in on `open` (no session yet), everything else on `market` (bearer session guard). */
export function marketRoutes(open: RouteGroup, market: RouteGroup, deps: MarketRouteDeps): void {
  const { pool } = deps;

  open.add<{ address: string }>(
    {
      method: "post",
      path: "/auth/challenge",
      tag: "Sign-in",
      summary: "A Sign-In with Ethereum (EIP-4361) message for the wallet to sign",
      description:
        "The message names this service's public origin (PUBLIC_URL, never the request's Host) as its domain and URI, the chain id, a single-use nonce and a 5-minute expiry.",
      body: { type: "object", additionalProperties: false, required: ["address"], properties: { address: WALLET } },
      responses: { 201: { description: "{ message, expiresAt }", schema: { type: "object", properties: { message: { type: "string" }, expiresAt: { type: "string", format: "date-time" } } } } },
      errors: ["VALIDATION_ERROR", "RATE_LIMITED"],
    },
    async (ctx, { body }) => {
      ctx.status = 201;
      ctx.body = await issueChallenge(deps.signIn, { address: body.address });
    },
  );

  open.add<{ message: string; signature: string }>(
    {
      method: "post",
      path: "/auth/session",
      tag: "Sign-in",
      summary: "Open a buyer session with the signed message",
      description:
        "`token` is `mks_` + 64 hex, valid 24 h; only its hash is stored. 401 INVALID_SIGNATURE when the signature is not the wallet's, " +
        "or the message was not issued here (or names another domain than this service's), was already used or has expired.",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["message", "signature"],
        properties: { message: { type: "string", minLength: 1, maxLength: 4096 }, signature: { type: "string", pattern: "^0x[0-9a-fA-F]+$", maxLength: 100_000 } },
      },
      responses: {
        201: {
          description: "{ token, wallet, expiresAt }",
          schema: { type: "object", required: ["token", "wallet", "expiresAt"], properties: { token: { type: "string" }, wallet: { type: "string" }, expiresAt: isoTimestamp } },
        },
      },
      errors: ["VALIDATION_ERROR", "RATE_LIMITED", "INVALID_SIGNATURE"],
    },
    async (ctx, { body }) => {
      ctx.status = 201;
      ctx.body = await openSession(deps.signIn, body);
    },
  );

  market.add(
    { method: "delete", path: "/auth/session", tag: "Sign-in", summary: "Sign out: the session's token stops working", responses: { 204: { description: "Signed out" } } },
    async (ctx) => {
      await closeSession(pool, bearerToken(ctx));
      ctx.status = 204;
      ctx.body = null;
    },
  );

  market.add(
    {
      method: "get",
      path: "/me",
      tag: "Buyer",
      summary: "The signed-in buyer: status, KYC, on-chain reputation, locks and volume",
      responses: {
        200: { description: "{ wallet, status, kycStatus, kycTier, reputation, openLocks, completedTrades, expiredLocks30d, monthlyVolumeMxn, suspendedUntil }", schema: buyerViewSchema },
      },
    },
    async (ctx) => {
      ctx.body = await buyerProfile(deps, currentBuyer(ctx));
    },
  );

  market.add<{ level: KycLevel; returnUrl: string }>(
    {
      method: "post",
      path: "/me/kyc",
      tag: "Buyer",
      summary: "Start a KYC session for the buyer (the same provider and rules as users')",
      description: "Each is a paid session at the provider: at most 3 a buyer in 24 hours (the 4th: 429 RATE_LIMITED with Retry-After).",
      body: kycSessionBodySchema,
      responses: { 201: { description: "{ sessionId, sessionUrl }", schema: kycSessionStartedSchema } },
      errors: ["VALIDATION_ERROR", "KYC_SESSION_FAILED", "RATE_LIMITED"],
    },
    async (ctx, { body }) => {
      checkReturnUrl(body.returnUrl, deps.sandbox);
      const wallet = currentBuyer(ctx);
      await ensureBuyer(pool, deps.policy, wallet);
      ctx.status = 201;
      ctx.body = await startBuyerKycSession({ pool, provider: deps.kycProvider, logger: deps.logger }, { wallet, level: body.level, returnUrl: body.returnUrl });
    },
  );

  market.add(
    {
      method: "post",
      path: "/orders/:escrowOrderId/lock-permit",
      tag: "Order book",
      summary: "A lock permit for this wallet: the service's EIP-712 LockPermit(orderId, buyer, deadline), valid 2 minutes",
      description:
        "The buyer's wallet then calls the escrow's `lock(permit, signature)`. Refusals, in order: NOT_FOUND, ORDER_NOT_AVAILABLE (not ACTIVE, listing expired, " +
        "the buyer is the seller), BUYER_SUSPENDED, USER_SANCTIONED, KYC_REQUIRED (BASIC; FULL once the month: completed trades, open locks and permits, and this order, reaches 50,000 MXN), LOCK_LIMIT_REACHED " +
        "(BUYER_MAX_OPEN_LOCKS open locks and unexpired permits for other orders).",
      responses: { 201: { description: "{ permit: { orderId, buyer, deadline }, signature, escrowAddress, chainId }", schema: lockPermitSchema } },
      errors: ["NOT_FOUND", "ORDER_NOT_AVAILABLE", "BUYER_SUSPENDED", "USER_SANCTIONED", "KYC_REQUIRED", "LOCK_LIMIT_REACHED"],
    },
    async (ctx, { params }) => {
      const issued = await deps.issuePermit(currentBuyer(ctx), params.escrowOrderId!);
      ctx.status = 201;
      ctx.body = { permit: issued.permit, signature: issued.signature, escrowAddress: issued.escrowAddress, chainId: issued.chainId };
    },
  );

  market.add<unknown, { status?: OrderStatus; limit: number; offset: number }>(
    {
      method: "get",
      path: "/trades",
      tag: "Trades",
      summary: "Orders this wallet locked, newest lock first",
      query: { type: "object", additionalProperties: false, properties: { status: { enum: TRADE_STATUSES }, ...pagination } },
      responses: { 200: { description: "{ trades, total, limit, offset, hasMore }", schema: tradesPageSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await listTrades(pool, currentBuyer(ctx), query);
    },
  );

  market.add(
    {
      method: "get",
      path: "/trades/:escrowOrderId",
      tag: "Trades",
      summary: "One trade: where and how much to pay (CLABE, bank, amount, concept), the payment report and the timeline",
      responses: {
        200: {
          description:
            "{ escrowOrderId, status, amount, totalMxn, lockedAt, lockExpiresAt, payment, paymentReport, timeline }; `paymentReport.verification` is PENDING, VERIFIED, REJECTED or HELD (a third-party payment under review, with `holdReason`)",
          schema: tradeDetailSchema,
        },
      },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      ctx.body = await tradeDetail(pool, currentBuyer(ctx), params.escrowOrderId!);
    },
  );

  const { signature: _signature, ...reportProperties } = paymentReportBody.properties;
  market.add<{ trackingKey: string; operationDate: string; senderBankCode: string; amountMxn?: number }>(
    {
      method: "post",
      path: "/trades/:escrowOrderId/payment",
      tag: "Trades",
      summary: "Report the SPEI payment (the session proves the wallet)",
      description:
        "Checks, in order: the body (400), that the trade is this wallet's (404), that it is LOCKED (409 INVALID_STATE), that fewer than 3 of its " +
        "reports are being verified (429 RATE_LIMITED until one is decided). The service then fetches the CEP itself and checks it, the payment " +
        "concept included; the outcome shows on the trade.",
      body: { type: "object", additionalProperties: false, required: ["trackingKey", "operationDate", "senderBankCode"], properties: reportProperties },
      responses: { 202: { description: "{ escrowOrderId, status, paymentReport }", schema: tradePaymentAnswerSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "RATE_LIMITED"],
    },
    async (ctx, { body, params }) => {
      resolveSenderBank(body.senderBankCode);
      const wallet = currentBuyer(ctx);
      const row = await getTradeRow(pool, wallet, params.escrowOrderId!);
      if (row.status !== "LOCKED") throw new InvalidStateError(`The trade is ${row.status}; a payment can be reported only while it is LOCKED`);
      const result = await reportPayment({ pool, ports: deps.ports }, null, row.id, body, { buyerWallet: wallet });
      ctx.status = 202;
      ctx.body = { escrowOrderId: row.escrow_order_id, status: result.status, paymentReport: result.payment };
    },
  );
}

/** The public order book (decisions 17): no token, so the page shows it before a wallet connects. */
export function orderBookRoutes(book: RouteGroup, deps: Pick<MarketRouteDeps, "pool" | "indexerSchema">): void {
  const readBook = sharedOrderBookReads(deps.pool, deps.indexerSchema);
  book.add<unknown, { minAmount?: number; maxAmount?: number; bankCode?: string; limit: number; offset: number }>(
    {
      method: "get",
      path: "/orders",
      tag: "Order book",
      summary: "The order book, public (no token): ACTIVE orders of every partner, cheapest for the buyer first",
      description:
        "Sorted by `totalMxn / receiveAmount`: what the buyer pays per token it receives (`receiveAmount` is what the escrow releases to the buyer, " +
        "`amount` less the partner's fee rounded down to token units; `pricePerUnit` is the seller's price per token sold). Never the seller's CLABE, " +
        "the partner or the user. `minAmount`/`maxAmount` are token amounts; `bankCode` is the seller bank's 3-digit CLABE prefix.",
      query: {
        type: "object",
        additionalProperties: false,
        properties: {
          minAmount: { type: "number", minimum: 0, maximum: 1_000_000_000 },
          maxAmount: { type: "number", minimum: 0, maximum: 1_000_000_000 },
          bankCode: { type: "string", pattern: "^[0-9]{3}$" },
          ...pagination,
        },
      },
      responses: { 200: { description: "The page of the book", schema: orderBookPageSchema } },
      errors: ["VALIDATION_ERROR", "RATE_LIMITED"],
    },
    async (ctx, { query }) => {
      ctx.body = await readBook(query);
    },
  );
}
