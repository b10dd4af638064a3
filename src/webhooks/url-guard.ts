import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { ValidationError } from "../domain/errors.ts";

/** Refuses (throws a ValidationError for) a webhook URL that may not be stored. */
export type WebhookUrlCheck = (url: string) => void;

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
  if (!allowPrivate) {
    // Caught early where it is certain without DNS: an address literal or a name that always means this machine.
    const host = bareHost(parsed.hostname);
    const range = isIP(host) ? blockedRange(host) : /(^|\.)localhost$/i.test(host) ? "loopback" : undefined;
    if (range) throw new ValidationError(`"webhookUrl" must not point at a ${describeRange(range)} address`);
  }
}

/** `[::1]` as URL.hostname gives it, without brackets. */
function bareHost(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}

const RANGE_NAMES: Record<string, string> = {
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  linkLocal: "link-local",
  loopback: "loopback",
  carrierGradeNat: "carrier-grade NAT",
  private: "private",
  uniqueLocal: "unique-local",
  reserved: "reserved",
};

function describeRange(range: string): string {
  return RANGE_NAMES[range] ?? `special-purpose (${range})`;
}

/**
 * Why a webhook may not be sent to this address, or undefined when it is an ordinary public unicast
 * address. Only `unicast` passes: loopback, private, link-local, unique-local, CGNAT, multicast,
 * unspecified and every other special-purpose range (documentation, NAT64, 6to4, Teredo...) are
 * refused. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
 */
export function blockedRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "invalid";
  const range = ipaddr.process(address).range();
  return range === "unicast" ? undefined : range;
}

export class WebhookTargetBlockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookTargetBlockedError";
  }
}

export interface ResolvedTarget {
  url: URL;
  /** The one address the attempt connects to (the Host header and TLS name stay the URL's host). */
  address: string;
  family: 4 | 6;
}

/**
 * Checks a webhook URL at delivery time and resolves its host once. Every address the name resolves to
 * must be public unless `allowPrivate`; the caller then connects to the returned address itself, so a
 * second DNS answer (rebinding) can never redirect the request inside the network.
 */
export async function resolveWebhookTarget(rawUrl: string, allowPrivate: boolean, signal?: AbortSignal): Promise<ResolvedTarget> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new WebhookTargetBlockedError(`Blocked: the webhook URL is not an absolute URL`);
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    throw new WebhookTargetBlockedError(`Blocked: the webhook URL must use https (got ${url.protocol.replace(":", "")})`);
  }
  const host = bareHost(url.hostname);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      const lookedUp = lookup(host, { all: true, verbatim: true });
      addresses = signal ? await abortable(lookedUp, signal) : await lookedUp;
    } catch (error) {
      if (signal?.aborted) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      throw new Error(`DNS lookup of ${host} failed (${code})`, { cause: error });
    }
    if (addresses.length === 0) throw new Error(`DNS lookup of ${host} returned no address`);
  }
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const range = blockedRange(address);
      if (range) {
        const what = address === host ? address : `${host} resolves to ${address}, which`;
        throw new WebhookTargetBlockedError(
          `Blocked: ${what} is a ${describeRange(range)} address; webhooks are only sent to public addresses`,
        );
      }
    }
  }
  const chosen = addresses[0]!;
  return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
