import { createHmac } from "node:crypto";

/**
 * `X-Webhook-Signature`: lowercase hex HMAC-SHA256 over `${timestamp}.${rawBody}`, keyed with the
 * partner's webhook secret exactly as issued (`whsec_` included) as UTF-8 bytes (decisions section 9).
 */
export function signWebhook(secret: string, timestamp: number, rawBody: string): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${rawBody}`, "utf8").digest("hex");
}

/**
 * The headers every webhook request carries: the delivery id, the Unix timestamp of the attempt and the
 * signature over both, with the partner's current secret (deliveries and the dashboard's test event).
 */
export function webhookHeaders(deliveryId: string, secret: string, at: Date, rawBody: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    "X-Webhook-Id": deliveryId,
    "X-Webhook-Timestamp": String(timestamp),
    "X-Webhook-Signature": signWebhook(secret, timestamp, rawBody),
  };
}
