import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

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

export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

/** Constant-time comparison of a presented key against a stored hash. */
export function apiKeyMatches(key: string, storedHash: Buffer): boolean {
  const presented = hashApiKey(key);
  return presented.length === storedHash.length && timingSafeEqual(presented, storedHash);
}

/** Shown in listings so an operator can tell keys apart without seeing them. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, 13);
}
