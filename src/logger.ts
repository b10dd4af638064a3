import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Fields whose values never reach the logs, at any depth, in any letter case and with or without `_` or
 * `-` between words (`webhook_secret`, `API-KEY`) (decisions section 19): API keys, webhook secrets,
 * private keys, session and invitation tokens, passwords, credentials.
 */
const SECRET_FIELD_NAMES = [
  "key",
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
  "x-admin-token",
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
  // A buyer's verified identity and a payer's (decisions 8): personal data, kept out of the logs.
  "identity",
  "verifiedName",
  "curp",
  "rfc",
  "senderName",
  "senderRfc",
  "payer",
];
/** A field name as the lookup compares it: lower case, without `_` and `-`. */
const normaliseField = (name: string) => name.replace(/[-_]/g, "").toLowerCase();
const SECRET_FIELDS = new Set(SECRET_FIELD_NAMES.map(normaliseField));
/** Fields that hold public 32-byte values (transaction hashes, escrow order ids), which look like private keys. */
const PUBLIC_HEX_FIELD = /(hash|id)$/;

const CENSOR = "[redacted]";
const MAX_DEPTH = 8;

/** Secrets recognisable by their form wherever they appear in text: our own key, secret and token formats. */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(ofrk|whsec|mks)_[0-9a-f]{16,}\b/g, `$1_${CENSOR}`],
  // Credentials inside URLs: user:password@, and key-bearing query parameters.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, `$1${CENSOR}@`],
  [/([?&](?:api[-_]?key|apikey|key|token|access[-_]?token|secret|password|auth|sig|signature)=)[^&#\s"']*/gi, `$1${CENSOR}`],
  // Bearer credentials and cookies written into text (an Authorization or Cookie header in a message).
  [/\b(Bearer\s+)[^\s"',;]+/gi, `$1${CENSOR}`],
  [/\b([\w-]*(?:session|token|sid|secret|password|offramp_dashboard)[\w-]*=)[^\s"';&]+/gi, `$1${CENSOR}`],
];

/** A 32-byte hex value: a private key looks like this, and so do transaction hashes and escrow order ids. */
const HEX_32_BYTES = /\b0x[0-9a-fA-F]{64}\b/g;

/**
 * An RPC provider's key often is a URL path segment (`https://rpc.example/v2/<key>`): opaque segments go,
 * those of 20 characters or more and shorter ones (8 or more) that mix letters and digits; words stay.
 */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/gi;
const OPAQUE_SEGMENT = /\/(?!0x)(?:[A-Za-z0-9_-]{20,}|(?=[A-Za-z_-]*\d)(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{8,})(?=[/?#]|$)/g;

/**
 * Text with secrets rewritten. In free text a 32-byte hex value is taken for a private key; a field
 * named for a public value (`txHash`, `escrowOrderId`) keeps it (`keepHex`).
 */
export function redactText(text: string, keepHex = false): string {
  let result = text.replace(URL_IN_TEXT, (url) => url.replace(OPAQUE_SEGMENT, `/${CENSOR}`));
  for (const [pattern, replacement] of SECRET_PATTERNS) result = result.replace(pattern, replacement);
  return keepHex ? result : result.replace(HEX_32_BYTES, `0x${CENSOR}`);
}

/** A copy of a log object with secret fields censored and secret-looking text rewritten. */
export function redactValue(value: unknown, depth = 0, field = ""): unknown {
  if (typeof value === "string") return redactText(value, PUBLIC_HEX_FIELD.test(field));
  if (value === null || typeof value !== "object" || depth > MAX_DEPTH) return value;
  if (value instanceof Error) return redactValue(pino.stdSerializers.err(value), depth + 1);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1, field));
  if (value instanceof Date || Buffer.isBuffer(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const name = normaliseField(key);
    copy[key] = SECRET_FIELDS.has(name) && field !== undefined && field !== null ? CENSOR : redactValue(field, depth + 1, name);
  }
  return copy;
}

/** The top-level paths pino redacts: each secret field as written, in lower case, snake case (both cases) and kebab case. */
function bindingPaths(): string[] {
  const spellings = SECRET_FIELD_NAMES.flatMap((field) => {
    const words = field.split(/[-_]|(?<=[a-z])(?=[A-Z])/).map((word) => word.toLowerCase());
    return [field, field.toLowerCase(), words.join("_"), words.join("_").toUpperCase(), words.join("-")];
  });
  return [...new Set(spellings)].map((name) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : `["${name}"]`));
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "offramp" },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Child bindings skip the formatters: pino's own redaction covers their top-level secret fields,
    // under each spelling a binding is likely to use.
    redact: { paths: bindingPaths(), censor: CENSOR },
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
