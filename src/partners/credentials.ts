import { hash, randomBytes, timingSafeEqual } from "node:crypto";

// Decisions section 2: `ofrk_` + 64 lowercase hex (69 chars); `whsec_` + 64 hex. Only a SHA-256 of the key is kept.
const API_KEY_PATTERN = /^ofrk_[0-9a-f]{64}$/;

export function generateApiKey(): string {
  return `ofrk_${randomBytes(32).toString("hex")}`;
}

export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("hex")}`;
}

export function isWellFormedApiKey(key: string): boolean {
  return API_KEY_PATTERN.test(key);
}

/** One-shot `hash`: it runs on every partner request, and costs about half of a `createHash` object. */
export function hashApiKey(key: string): Buffer {
  return hash("sha256", key, "buffer");
}

/** Constant-time comparison of a presented key's hash (`hashApiKey`, computed once per request) against a stored hash. */
export function apiKeyHashMatches(presentedHash: Buffer, storedHash: Buffer): boolean {
  return presentedHash.length === storedHash.length && timingSafeEqual(presentedHash, storedHash);
}

/** Shown in listings so an operator can tell keys apart without seeing them. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, 13);
}
