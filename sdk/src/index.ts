// @offramp/sdk: the partner API client, its typed errors, and webhook verification.
export { API_PATH, createOfframpClient, type CallOptions, type DeliveryPage, type OfframpClient, type OfframpClientOptions, type Order, type OrderPage, type Quote, type User } from "./client.ts";
export * from "./errors.ts";
export { DEFAULT_RETRY, retryIsSafe, type RetryOptions } from "./transport.ts";
export { verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, WebhookVerificationError, type WebhookEvent, type WebhookEventType, type WebhookHeaders } from "./webhooks.ts";
export type { components, operations, paths } from "./generated/partner-api.ts";
