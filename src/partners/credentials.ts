import { hash, randomBytes } from "node:crypto";

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

/**
 * A key's SHA-256 in hex, by which the credential cache finds its partner on every partner request: the
 * one-shot `hash` into a string costs about a quarter of hashing into a Buffer and converting that
 * (docs/benchmarks.md, figure 1).
 */
export function apiKeyDigest(key: string): string {
  return hash("sha256", key, "hex");
}

/** The same digest as stored (`partners.api_key_hash`). */
export function hashApiKey(key: string): Buffer {
  return Buffer.from(apiKeyDigest(key), "hex");
}

/** Shown in listings so an operator can tell keys apart without seeing them. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, 13);
}
