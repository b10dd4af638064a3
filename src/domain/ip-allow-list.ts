import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) is compared as IPv4. */
function normalize(address: Address): Address {
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (address as ipaddr.IPv6).toIPv4Address();
  }
  return address;
}

/** Whether an allow-list entry is an exact IPv4/IPv6 address or a CIDR range. */
export function isValidAllowListEntry(entry: string): boolean {
  return entry.includes("/") ? ipaddr.isValidCIDR(entry) : ipaddr.isValid(entry);
}

/** An empty list allows every address (spec, Authentication 4). */
export function isAddressAllowed(clientAddress: string, allowList: readonly string[]): boolean {
  if (allowList.length === 0) return true;
  if (!ipaddr.isValid(clientAddress)) return false;
  const client = normalize(ipaddr.parse(clientAddress));
  return allowList.some((entry) => {
    if (entry.includes("/")) {
      const [range, bits] = ipaddr.parseCIDR(entry);
      const network = normalize(range);
      const prefix = network.kind() === "ipv4" && range.kind() === "ipv6" ? bits - 96 : bits;
      return client.kind() === network.kind() && client.match(network, prefix);
    }
    const exact = normalize(ipaddr.parse(entry));
    return exact.kind() === client.kind() && exact.toNormalizedString() === client.toNormalizedString();
  });
}
