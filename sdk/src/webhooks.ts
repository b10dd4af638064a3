// Webhook deliveries (docs/webhooks.md): X-Webhook-Signature is the lowercase hex HMAC-SHA256 of
// `${X-Webhook-Timestamp}.${raw body}`, keyed with the webhook secret exactly as issued (`whsec_`
// included, as UTF-8 bytes).
import { createHmac, timingSafeEqual } from "node:crypto";

/** Deliveries whose X-Webhook-Timestamp is further than this from our clock are refused (replay guard). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

export type WebhookEventType =
  | "order.created"
  | "order.deposit_confirmed"
  | "order.locked"
  | "order.payment_verified"
  | "order.completed"
  | "order.lock_expired"
  | "order.disputed"
  | "order.dispute_resolved"
  | "order.refunded"
  | "order.expired";

/** A delivery's body: `data` always has these four fields, plus what the event adds (docs/webhooks.md). */
export interface WebhookEvent {
  event: WebhookEventType;
  timestamp: string;
  data: { orderId: string; status: string; partnerUserRef: string; sequence: number; [field: string]: unknown };
}

/** Why a delivery was refused, and the status to answer it with: 400 for `stale`, 401 for `bad-signature`. */
export class WebhookVerificationError extends Error {
  readonly reason: "stale" | "bad-signature";
  readonly status: 400 | 401;
  constructor(reason: "stale" | "bad-signature", message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
    this.status = reason === "stale" ? 400 : 401;
  }
}

/** Request headers as fetch (`Headers`) or Node's http (`req.headers`) give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Checks one delivery and returns its event. `rawBody` is the body exactly as received (never a
 * re-serialized JSON object); `secrets` are the webhook secrets accepted right now (the current one, plus
 * the previous one for a while after a rotation). Throws WebhookVerificationError: `stale` for a missing
 * timestamp or one more than 300 s from our clock, `bad-signature` for a signature that none of the
 * secrets gives. The same X-Webhook-Id can arrive more than once: skip an id already processed.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | readonly string[],
  options: { nowSeconds?: number; toleranceSeconds?: number } = {},
): WebhookEvent {
  const timestamp = header(headers, "x-webhook-timestamp");
  const signature = header(headers, "x-webhook-signature");
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError("stale", "X-Webhook-Timestamp is missing or not Unix seconds");
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError("stale", `X-Webhook-Timestamp is ${now - Number(timestamp)} s from this clock`);
  }
  if (!signature || !/^[0-9a-f]{64}$/.test(signature)) throw new WebhookVerificationError("bad-signature", "X-Webhook-Signature is missing or not 64 hex digits");
  const received = Buffer.from(signature, "hex");
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody;
  for (const secret of typeof secrets === "string" ? [secrets] : secrets) {
    const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest();
    if (timingSafeEqual(expected, received)) return JSON.parse(Buffer.from(body).toString("utf8")) as WebhookEvent;
  }
  throw new WebhookVerificationError("bad-signature", "X-Webhook-Signature matches none of the secrets");
}
