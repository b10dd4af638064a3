import { createHash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { RateLimitedError } from "../domain/errors.ts";

// Dashboard credentials (decisions section 18). Passwords are hashed with scrypt, which is memory-hard:
// N = 2^15, r = 8 uses 32 MiB per hash. The parameters are stored with each hash, so they can be raised
// later without invalidating existing passwords. Session and invitation tokens are random 32 bytes;
// only their SHA-256 is stored.

const SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
export const MIN_PASSWORD_LENGTH = 12;

/**
 * Hashes running at once. Each takes 32 MiB and a thread of libuv's pool (4 threads unless
 * UV_THREADPOOL_SIZE says otherwise), which file reads, DNS lookups and the rest of crypto share: a burst
 * of sign-ins waits here in line, in memory it does not allocate, and leaves the pool's other threads free.
 */
export const CONCURRENT_HASHES = 2;
/**
 * Hashes allowed to wait for a slot (a few seconds of work). Past it a sign-in is refused at once with
 * 429 and `Retry-After: 1` rather than queued: a flood from many addresses cannot make every honest
 * sign-in wait minutes, nor hold the requests waiting in memory.
 */
export const MAX_WAITING_HASHES = 32;
let running = 0;
const waiting: (() => void)[] = [];

async function inHashingSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= CONCURRENT_HASHES) {
    if (waiting.length >= MAX_WAITING_HASHES) {
      const error = new RateLimitedError(1);
      error.message = "Too many passwords are being checked; retry after 1 s";
      throw error;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running += 1;
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, so `running` never undercounts.
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  }
}

function derive(password: string, salt: Buffer, options: { N: number; r: number; p: number }): Promise<Buffer> {
  const scryptOptions: ScryptOptions = { ...options, maxmem: 256 * options.N * options.r };
  return inHashingSlot(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password.normalize("NFKC"), salt, KEY_LENGTH, scryptOptions, (error, key) => (error ? reject(error) : resolve(key)));
      }),
  );
}

/** `scrypt$N$r$p$salt$hash`, salt and hash base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, SCRYPT);
  return ["scrypt", SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const key = await derive(password, Buffer.from(salt, "base64url"), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

// An unknown email still costs one hash, so its answer takes as long as a wrong password's.
let dummyHash: Promise<string> | undefined;
export async function verifyAgainstNothing(password: string): Promise<false> {
  // Forgotten when it fails (the line of hashes full), so a refusal is not kept for every later unknown email.
  dummyHash ??= hashPassword(randomBytes(16).toString("hex")).catch((error: unknown) => {
    dummyHash = undefined;
    throw error;
  });
  await verifyPassword(password, await dummyHash);
  return false;
}

export function generateToken(): string {
  return randomBytes(32).toString("base64url");
}

export function hashToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/**
 * The session's CSRF token is derived from the session token (which only the HttpOnly cookie holds), so
 * nothing more is stored and a page that reloads can ask for it again with its cookie.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHash("sha256").update(`csrf:${sessionToken}`, "utf8").digest("base64url");
}

export function sameToken(a: string, b: string): boolean {
  const left = createHash("sha256").update(a).digest();
  const right = createHash("sha256").update(b).digest();
  return timingSafeEqual(left, right);
}
