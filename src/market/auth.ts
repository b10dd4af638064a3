import { createHash, randomBytes } from "node:crypto";
import type Koa from "koa";
import { getAddress, type Hex, type PublicClient } from "viem";
import { createSiweMessage, generateSiweNonce, parseSiweMessage } from "viem/siwe";
import type { Pool, Queryable } from "../db/pool.ts";
import { InvalidSignatureError, UnauthorizedError } from "../domain/errors.ts";
import { bearerToken, type AppContext, type AppState } from "../http/context.ts";
import { ensureBuyer, normaliseWallet, type BuyerPolicy } from "./buyers.ts";

// Wallet sign-in (decisions 17): EIP-4361 messages built and read with viem's SIWE helpers, a nonce
// used once within 5 minutes, and a bearer token of which only the SHA-256 is stored. Neither the token
// nor the nonce is ever logged.

export const CHALLENGE_TTL_SECONDS = 300;
export const SESSION_TTL_SECONDS = 86_400;
export const SIWE_STATEMENT = "Sign in to the Offramp market.";
const TOKEN_PATTERN = /^mks_[0-9a-f]{64}$/;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The request state of market routes once the bearer guard has run. */
export interface MarketState extends AppState {
  buyerWallet?: string;
}

export function currentBuyer(ctx: AppContext): string {
  const wallet = (ctx.state as MarketState).buyerWallet;
  if (!wallet) throw new Error("market route reached without a buyer session");
  return wallet;
}

/** `Authorization: Bearer mks_...` of an open session; 401 UNAUTHORIZED otherwise. */
export function buyerSessionGuard(db: Queryable): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const token = bearerToken(ctx);
    if (!token || !TOKEN_PATTERN.test(token)) throw new UnauthorizedError("A valid market session token is required (Authorization: Bearer mks_...)");
    const { rows } = await db.query<{ wallet: string }>(
      "SELECT wallet FROM market_sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()",
      [sha256(token)],
    );
    if (!rows[0]) throw new UnauthorizedError("The market session token is unknown, expired or signed out");
    (ctx.state as MarketState).buyerWallet = rows[0].wallet;
    await next();
  };
}

export interface SignInDeps {
  pool: Pool;
  chainId: number;
  publicClient: Pick<PublicClient, "verifySiweMessage">;
  policy: BuyerPolicy;
  /** PUBLIC_URL: the origin whose host is every message's domain (decisions 17), never the request's Host. */
  publicUrl: string;
}

/**
 * A SIWE message for this service, with a fresh single-use nonce. Its domain is PUBLIC_URL's host,
 * whatever `Host` or `X-Forwarded-Host` the request carried: a phishing page that relays the challenge
 * gets a message naming this service, which a wallet shows as not the page the buyer is on.
 */
export async function issueChallenge(deps: SignInDeps, input: { address: string; now?: Date }) {
  const now = input.now ?? new Date();
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000);
  const nonce = generateSiweNonce();
  const message = createSiweMessage({
    domain: new URL(deps.publicUrl).host,
    address: getAddress(input.address),
    statement: SIWE_STATEMENT,
    uri: deps.publicUrl,
    version: "1",
    chainId: deps.chainId,
    nonce,
    issuedAt: now,
    expirationTime: expiresAt,
  });
  await deps.pool.query("INSERT INTO market_nonces (nonce, wallet, message_hash, expires_at) VALUES ($1, $2, $3, $4)", [
    nonce,
    normaliseWallet(input.address),
    sha256(message),
    expiresAt,
  ]);
  return { message, expiresAt: expiresAt.toISOString() };
}

/**
 * Opens a session for a signed challenge: the message must be one issued here (same bytes) naming this
 * service's domain and URI, unused and unexpired, and the signature that wallet's (EOA, or a contract wallet through ERC-1271/6492). The nonce
 * is used up in the same statement that checks it, so two concurrent sign-ins with one message get one
 * session.
 */
export async function openSession(deps: SignInDeps, input: { message: string; signature: string; now?: Date }) {
  const now = input.now ?? new Date();
  let parsed: ReturnType<typeof parseSiweMessage>;
  try {
    parsed = parseSiweMessage(input.message);
  } catch {
    throw new InvalidSignatureError("The message is not a sign-in message issued by this service");
  }
  if (!parsed.nonce || !parsed.address || !parsed.domain) throw new InvalidSignatureError("The message is not a sign-in message issued by this service");
  const domain = new URL(deps.publicUrl).host;
  if (parsed.domain !== domain || parsed.uri !== deps.publicUrl) throw new InvalidSignatureError(`The message is for another site than ${domain}`);
  const { rows } = await deps.pool.query<{ wallet: string; message_hash: string; expires_at: Date; used_at: Date | null }>(
    "SELECT wallet, message_hash, expires_at, used_at FROM market_nonces WHERE nonce = $1",
    [parsed.nonce],
  );
  const issued = rows[0];
  if (!issued || issued.message_hash !== sha256(input.message) || issued.wallet !== normaliseWallet(parsed.address)) {
    throw new InvalidSignatureError("The message is not a sign-in message issued by this service");
  }
  if (issued.used_at) throw new InvalidSignatureError("The sign-in message was already used");
  if (issued.expires_at.getTime() <= now.getTime()) throw new InvalidSignatureError("The sign-in message has expired");
  const valid = await deps.publicClient
    .verifySiweMessage({ message: input.message, signature: input.signature as Hex, address: parsed.address, nonce: parsed.nonce, domain, time: now })
    .catch(() => false);
  if (!valid) throw new InvalidSignatureError(`The signature is not ${getAddress(parsed.address)}'s signature of the message`);
  const used = await deps.pool.query("UPDATE market_nonces SET used_at = now() WHERE nonce = $1 AND used_at IS NULL AND expires_at > now()", [parsed.nonce]);
  if (!used.rowCount) throw new InvalidSignatureError("The sign-in message was already used");

  const wallet = normaliseWallet(parsed.address);
  await ensureBuyer(deps.pool, deps.policy, wallet);
  const token = `mks_${randomBytes(32).toString("hex")}`;
  const expiresAt = new Date(now.getTime() + SESSION_TTL_SECONDS * 1000);
  await deps.pool.query("INSERT INTO market_sessions (token_hash, wallet, expires_at) VALUES ($1, $2, $3)", [sha256(token), wallet, expiresAt]);
  return { token, wallet: getAddress(wallet), expiresAt: expiresAt.toISOString() };
}

/**
 * Removes challenges an hour past their expiry and sessions a day past their end (expired or signed
 * out): anyone can have challenges written (60 a minute per address), so they must not pile up. A
 * removed challenge is refused like any unknown one.
 */
export async function pruneMarketSignIns(db: Queryable): Promise<number> {
  const nonces = await db.query("DELETE FROM market_nonces WHERE expires_at < now() - interval '1 hour'");
  const sessions = await db.query("DELETE FROM market_sessions WHERE expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day'");
  return (nonces.rowCount ?? 0) + (sessions.rowCount ?? 0);
}

/** Signs a session out: its token stops working at once. */
export async function closeSession(db: Queryable, token: string | undefined): Promise<void> {
  if (token) await db.query("UPDATE market_sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL", [sha256(token)]);
}
