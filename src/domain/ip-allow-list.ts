import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) is compared as IPv4. */
function normalize(address: Address): Address {
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (address as ipaddr.IPv6).toIPv4Address();
  }
  return address;
}

/**
 * Only the standard notations: dotted-quad IPv4 and RFC 4291 IPv6, without a zone. (ipaddr.js alone also
 * takes `10` or `0x7f.1` as IPv4 addresses, which an operator writing an allow-list never means.)
 */
function isStandardAddress(text: string): boolean {
  return !text.includes("%") && isIP(text) !== 0;
}

/** Whether an allow-list entry is an exact IPv4/IPv6 address or a CIDR range (`10.0.0.0/8`, `2001:db8::/32`). */
export function isValidAllowListEntry(entry: string): boolean {
  const slash = entry.indexOf("/");
  if (slash === -1) return isStandardAddress(entry);
  const address = entry.slice(0, slash);
  const bits = entry.slice(slash + 1);
  if (!isStandardAddress(address) || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (isIP(address) === 4 ? 32 : 128);
}

/** An empty list allows every address (spec, Authentication 4). */
export function isAddressAllowed(clientAddress: string, allowList: readonly string[]): boolean {
  if (allowList.length === 0) return true;
  if (!isStandardAddress(clientAddress)) return false;
  const client = normalize(ipaddr.parse(clientAddress));
  return allowList.some((entry) => {
    if (!isValidAllowListEntry(entry)) return false;
    if (entry.includes("/")) {
      const [range, bits] = ipaddr.parseCIDR(entry);
      const network = normalize(range);
      const prefix = network.kind() === "ipv4" && range.kind() === "ipv6" ? bits - 96 : bits;
      return client.kind() === network.kind() && prefix >= 0 && client.match(network, prefix);
    }
    const exact = normalize(ipaddr.parse(entry));
    return exact.kind() === client.kind() && exact.toNormalizedString() === client.toNormalizedString();
  });
}

/**
 * The address a per-address rate limit counts (decisions section 19): an IPv4 address itself, an IPv6
 * address by its /64, the network one subscriber is given (a host there takes any of its 2^64 addresses
 * at will). IPv4-mapped IPv6 is IPv4. Anything else (an X-Forwarded-For entry that is no address) is its
 * own key, cut short.
 */
export function rateLimitAddress(clientAddress: string): string {
  if (!isStandardAddress(clientAddress)) return `other:${clientAddress.slice(0, 64)}`;
  const address = normalize(ipaddr.parse(clientAddress));
  if (address.kind() === "ipv4") return address.toString();
  const network = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${network.join(":")}::/64`;
}
