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

/**
 * Logged text is cut to this many characters before any pattern runs on it (decisions 19: bounded work
 * per request), with a marker saying how long it was. A request path, header or body field is the
 * caller's, up to 16 KB and more: the patterns below are linear, and the cut bounds even that.
 */
export const MAX_LOGGED_CHARS = 2048;
/** An error's stack is cut longer: its frames are ours, and they are what an operator reads. */
const MAX_LOGGED_STACK_CHARS = 8192;
/**
 * A cut can fall inside a secret and leave a prefix too short for its pattern (`0x` and 60 hex digits):
 * the cut moves back over the unbroken run it falls in, at most this far (longer than any secret here).
 */
const CUT_BACKTRACK = 100;

/** `text`, or its first `maxChars` characters (less the run a secret may straddle) and the marker to append after redaction. */
function cutText(text: string, maxChars: number): { head: string; marker: string } {
  if (text.length <= maxChars) return { head: text, marker: "" };
  let end = maxChars;
  const floor = maxChars - CUT_BACKTRACK;
  while (end > floor && !/\s/.test(text[end - 1]!)) end -= 1;
  return { head: text.slice(0, end), marker: `…[cut: ${text.length} chars]` };
}

// Every pattern below is linear in its input: no nested or overlapping quantifiers, and each starts at a
// fixed literal or the start of a run, so a failed match is given up after one scan of its run. (The
// `name=value` pattern they replace, `\b[\w-]*(?:token|…)[\w-]*=`, took cubic time on `token-token-…`:
// a 12 KB request path blocked the event loop for 21 s.)

/** Secrets recognisable by their form wherever they appear in text: our own key, secret and token formats. */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(ofrk|whsec|mks)_[0-9a-f]{16,}\b/g, `$1_${CENSOR}`],
  // Credentials inside URLs: the user:password@ after any scheme's `://` (the user part holds no `/`).
  [/:\/\/[^\s/?#@]*@/g, `://${CENSOR}@`],
  [/([?&](?:api[-_]?key|apikey|key|token|access[-_]?token|secret|password|auth|sig|signature)=)[^&#\s"']*/gi, `$1${CENSOR}`],
  // Bearer credentials written into text (an Authorization header in a message).
  [/\b(Bearer\s+)[^\s"',;]+/gi, `$1${CENSOR}`],
];

/** Cookies and assignments written into text (`session=…`, `x-auth-token=…`): a name, `=`, a value. */
const ASSIGNMENT_NAME = /(?<![\w-])[\w-]+=/g;
const ASSIGNMENT_VALUE = /[^\s"';&]+/y;
const SECRET_NAME_PARTS = ["session", "token", "sid", "secret", "password", "offramp_dashboard"];

/** Rewrites the value of each `name=value` whose name holds a secret word; one pass over the text. */
function redactAssignments(text: string): string {
  let result = "";
  let copied = 0;
  ASSIGNMENT_NAME.lastIndex = 0;
  for (let match = ASSIGNMENT_NAME.exec(text); match; match = ASSIGNMENT_NAME.exec(text)) {
    const name = match[0].toLowerCase();
    if (!SECRET_NAME_PARTS.some((part) => name.includes(part))) continue;
    ASSIGNMENT_VALUE.lastIndex = ASSIGNMENT_NAME.lastIndex;
    if (!ASSIGNMENT_VALUE.exec(text)) continue;
    result += `${text.slice(copied, ASSIGNMENT_NAME.lastIndex)}${CENSOR}`;
    copied = ASSIGNMENT_VALUE.lastIndex;
    ASSIGNMENT_NAME.lastIndex = copied;
  }
  return copied === 0 ? text : result + text.slice(copied);
}

/** A 32-byte hex value: a private key looks like this, and so do transaction hashes and escrow order ids. */
const HEX_32_BYTES = /\b0x[0-9a-fA-F]{64}\b/g;

/**
 * An RPC provider's key often is a URL path segment (`https://rpc.example/v2/<key>`): opaque segments go,
 * those of 20 characters or more and shorter ones (8 or more) that mix letters and digits; words stay.
 * Segments are split by code, so each is looked at once.
 */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/gi;
const OPAQUE_SEGMENT = /^(?!0x)(?:[A-Za-z0-9_-]{20,}|(?=[A-Za-z_-]*\d)(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{8,})$/;

function redactUrlPath(url: string): string {
  const [beforeQuery, ...rest] = url.split(/(?=[?#])/);
  const [scheme, , ...segments] = beforeQuery!.split("/");
  const kept = segments.map((segment, index) => (index > 0 && OPAQUE_SEGMENT.test(segment) ? CENSOR : segment));
  return [[scheme, "", ...kept].join("/"), ...rest].join("");
}

/**
 * What every pattern above needs somewhere in the text (a URL's `:`, an assignment's `=`, a key's prefix,
 * `0x`, `Bearer`): text without any is returned as it is after one scan. Most logged strings (a method, a
 * request path, an id) hold none, and the access log writes several a request.
 */
const MAY_HOLD_SECRET = /[=:]|0x|bearer|ofrk_|whsec_|mks_/i;

/**
 * Text with secrets rewritten, cut to `maxChars` first. In free text a 32-byte hex value is taken
 * for a private key; a field named for a public value (`txHash`, `escrowOrderId`) keeps it (`keepHex`).
 */
export function redactText(text: string, keepHex = false, maxChars = MAX_LOGGED_CHARS): string {
  const { head, marker } = cutText(text, maxChars);
  if (!MAY_HOLD_SECRET.test(head)) return head + marker;
  let result = head.replace(URL_IN_TEXT, redactUrlPath);
  for (const [pattern, replacement] of SECRET_PATTERNS) result = result.replace(pattern, replacement);
  result = redactAssignments(result);
  return (keepHex ? result : result.replace(HEX_32_BYTES, `0x${CENSOR}`)) + marker;
}

/** A copy of a log object with secret fields censored and secret-looking text rewritten. */
export function redactValue(value: unknown, depth = 0, field = ""): unknown {
  if (typeof value === "string") return redactText(value, PUBLIC_HEX_FIELD.test(field), field === "stack" ? MAX_LOGGED_STACK_CHARS : MAX_LOGGED_CHARS);
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
