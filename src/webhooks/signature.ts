import { createHmac } from "node:crypto";

/**
 * `X-Webhook-Signature`: lowercase hex HMAC-SHA256 over `${timestamp}.${rawBody}`, keyed with the
 * partner's webhook secret exactly as issued (`whsec_` included) as UTF-8 bytes (decisions section 9).
 */
export function signWebhook(secret: string, timestamp: number, rawBody: string): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${rawBody}`, "utf8").digest("hex");
}
