// The service's way to the chain (decisions 7): RPC_URL lists one or more JSON-RPC endpoints,
// comma-separated, in order of preference. Each call goes to the first endpoint, and to the next when one
// refuses (429, 5xx, timeout, reset, refused connection); the whole round is repeated with growing waits
// (a 429's Retry-After is honoured). Only calls that are safe to repeat go through here: reads, and raw
// transactions (the same bytes are the same transaction: a repeat is answered "already known" or "nonce
// too low", which the senders take for success, src/chain/wallet-sends.ts and transaction-sender.ts).
// A call still failing after that throws; an HTTP request it served then answers 503 CHAIN_UNAVAILABLE
// (src/http/errors.ts).
import { BaseError, fallback, http, HttpRequestError, LimitExceededRpcError, InternalRpcError, TimeoutError, WaitForTransactionReceiptTimeoutError, type Transport } from "viem";

/** Per attempt, per endpoint. */
export const RPC_TIMEOUT_MS = 10_000;
/** Rounds over every endpoint after the first, waiting 2^n x RPC_RETRY_DELAY_MS before each (about 6 s in all). */
export const RPC_RETRY_COUNT = 5;
export const RPC_RETRY_DELAY_MS = 100;

/**
 * Calls made in the same tick go to the node as one JSON-RPC batch (one HTTP request): a transaction's
 * reads before signing, and every trade's calls that meet in that tick, cost one round trip (issue 24).
 * Bounded, as providers cap a batch's size.
 */
export const RPC_BATCH_SIZE = 50;

/** The endpoints of an RPC_URL value, in order. */
export function rpcEndpoints(rpcUrl: string): string[] {
  return rpcUrl
    .split(",")
    .map((endpoint) => endpoint.trim().replace(/\/+$/, ""))
    .filter((endpoint) => endpoint !== "");
}

/**
 * The viem transport over every endpoint of `rpcUrl`, with failover and retries. viem sends a raw
 * transaction without retries (its sendRawTransaction asks for none): here it gets them like a read,
 * since the same signed bytes can only ever be one transaction.
 */
export function chainTransport(rpcUrl: string): Transport {
  const endpoints = rpcEndpoints(rpcUrl);
  if (endpoints.length === 0) throw new Error("RPC_URL names no endpoint");
  const inner = fallback(
    endpoints.map((endpoint) => http(endpoint, { timeout: RPC_TIMEOUT_MS, batch: { batchSize: RPC_BATCH_SIZE } })),
    { retryCount: RPC_RETRY_COUNT, retryDelay: RPC_RETRY_DELAY_MS },
  );
  return (config) => {
    const transport = inner(config);
    const request: typeof transport.request = (args, options) =>
      transport.request(args, args.method === "eth_sendRawTransaction" ? { ...options, retryCount: RPC_RETRY_COUNT } : options);
    return { ...transport, request };
  };
}

/**
 * Whether `error` says the chain could not be reached (every endpoint refused, timed out or failed, after
 * the retries, or a sent transaction's receipt did not come in time), as opposed to an answer from the
 * chain (a revert, a nonce refusal).
 */
export function isChainUnreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  return (
    error.walk(
      (cause) =>
        cause instanceof HttpRequestError ||
        cause instanceof TimeoutError ||
        cause instanceof WaitForTransactionReceiptTimeoutError ||
        cause instanceof LimitExceededRpcError ||
        cause instanceof InternalRpcError ||
        (cause as { code?: unknown }).code === 429,
    ) !== null
  );
}
