// Which addresses are internal: the one classification the gateway applies wherever a URL is user or
// upstream input (webhook receiving URLs, src/webhooks/address.ts; storage URLs a provider hands
// out, src/providers/upload.ts).
//
// - Literals: the WHATWG URL parser already turns every IPv4 spelling (`2130706433`, `0x7f.1`,
//   `0177.0.0.1`, `127.1`) into dotted decimal; `ipaddr.js` classifies the result, after unwrapping
//   IPv4-mapped IPv6 (`[::ffff:7f00:1]`). Only the `unicast` range passes: loopback, private,
//   link-local (169.254.169.254, the cloud metadata address), carrier-grade NAT (100.100.100.200,
//   Alibaba's), unique-local (fd00:ec2::254), multicast, reserved, 6to4, Teredo, NAT64,
//   IPv4-compatible IPv6 (::7f00:1) and the other special ranges are all refused.
// - Names: `localhost` and the `.localhost`, `.local` and `.internal` names are local.
import ipaddr from 'ipaddr.js';

/** The range name of an address (IPv4-mapped IPv6 unwrapped), or null when it is not an IP address. */
export function addressRange(address: string): string | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return null;
  const addr = ipaddr.process(bare);
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated) is `unicast` to ipaddr.js; some stacks route it to IPv4.
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) return 'ipv4Compatible';
  return addr.range();
}

export function isPublicAddress(address: string): boolean {
  return addressRange(address) === 'unicast';
}

/** A host name that names this machine or its local network (not an IP literal). */
export function isLocalName(hostname: string): boolean {
  return /^(localhost|.*\.localhost|.*\.local|.*\.internal)\.?$/i.test(hostname);
}
