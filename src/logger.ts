import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Fields whose values never reach the logs, at any depth and in any letter case (decisions section 19):
 * API keys, webhook secrets, private keys, session and invitation tokens, passwords, credentials.
 */
const SECRET_FIELD_NAMES = [
  "apiKey",
  "x-api-key",
  "webhookSecret",
  "secret",
  "clientSecret",
  "kycProviderSecret",
  "kycProviderApiKey",
  "kycSecret",
  "kycApiKey",
  "password",
  "newPassword",
  "token",
  "sessionToken",
  "csrfToken",
  "x-csrf-token",
  "inviteToken",
  // Market sign-in (decisions 17): single-use SIWE nonces.
  "nonce",
  "adminToken",
  "banxicoToken",
  "bmx-token",
  "authorization",
  "cookie",
  "set-cookie",
  "x-auth-client",
  "x-hmac-signature",
  "privateKey",
  "servicePrivateKey",
  "arbiterPrivateKey",
  "deployerPrivateKey",
  "mnemonic",
  "credentials",
  "inviteUrl",
];
const SECRET_FIELDS = new Set(SECRET_FIELD_NAMES.map((field) => field.toLowerCase()));

const CENSOR = "[redacted]";
const MAX_DEPTH = 8;

/** Secrets recognisable by their form wherever they appear in text: our own key, secret and token formats. */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(ofrk|whsec|mks)_[0-9a-f]{16,}\b/g, `$1_${CENSOR}`],
  // Credentials inside URLs: user:password@, and key-bearing query parameters.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, `$1${CENSOR}@`],
  [/([?&](?:api[-_]?key|apikey|key|token|access[-_]?token|secret|password|auth|sig|signature)=)[^&#\s"']*/gi, `$1${CENSOR}`],
];

/** An RPC provider's key often is a URL path segment (`https://rpc.example/v2/<key>`): long opaque segments go. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/gi;
const OPAQUE_SEGMENT = /\/(?!0x)[A-Za-z0-9_-]{20,}(?=[/?#]|$)/g;

export function redactText(text: string): string {
  let result = text.replace(URL_IN_TEXT, (url) => url.replace(OPAQUE_SEGMENT, `/${CENSOR}`));
  for (const [pattern, replacement] of SECRET_PATTERNS) result = result.replace(pattern, replacement);
  return result;
}

/** A copy of a log object with secret fields censored and secret-looking text rewritten. */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactText(value);
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return value;
  if (value instanceof Error) return redactValue(pino.stdSerializers.err(value), depth + 1);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1));
  if (value instanceof Date || Buffer.isBuffer(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    copy[key] = SECRET_FIELDS.has(key.toLowerCase()) && field !== undefined && field !== null ? CENSOR : redactValue(field, depth + 1);
  }
  return copy;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "offramp" },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Child bindings skip the formatters: pino's own redaction covers their top-level secret fields.
    redact: { paths: SECRET_FIELD_NAMES.filter((field) => /^[a-z]+$/i.test(field)), censor: CENSOR },
    formatters: {
      log: (object) => redactValue(object) as Record<string, unknown>,
      bindings: (bindings) => redactValue(bindings) as Record<string, unknown>,
    },
    hooks: {
      // The message text too: an error message may carry an RPC URL with its key.
      logMethod(args, method) {
        method.apply(this, args.map((argument) => (typeof argument === "string" ? redactText(argument) : argument)) as Parameters<typeof method>);
      },
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
