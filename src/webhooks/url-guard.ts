import { ValidationError } from "../domain/errors.ts";

/**
 * A webhook URL must be absolute `https` (decisions section 9); `WEBHOOK_ALLOW_PRIVATE` (sandbox) also
 * allows `http`. Addresses are checked again after DNS resolution at every delivery.
 */
export function checkWebhookUrlSyntax(url: string, allowPrivate: boolean): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError('"webhookUrl" must be an absolute URL');
  }
  if (parsed.protocol !== "https:" && !(allowPrivate && parsed.protocol === "http:")) {
    throw new ValidationError('"webhookUrl" must use https');
  }
  if (parsed.username || parsed.password) throw new ValidationError('"webhookUrl" must not carry credentials');
}
