import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Why an address is no place to send webhooks (its range: loopback, private,
 * linkLocal, uniqueLocal, carrierGradeNat, ...), or undefined for a public
 * unicast address. Only public unicast passes: that refuses loopback,
 * RFC 1918, link-local (with the cloud metadata address 169.254.169.254),
 * IPv6 unique-local (with fd00:ec2::254), and every IPv6 form that embeds or
 * tunnels to an IPv4 address: NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4,
 * Teredo, IPv4-translated, and the deprecated IPv4-compatible ::/96. An
 * IPv4-mapped IPv6 address is judged as the IPv4 address it carries, and an
 * ISATAP interface id (…:0:5efe:a.b.c.d) by the IPv4 address in it.
 */
export function addressRefusal(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // ipaddr.js reads "::a.b.c.d" as IPv4-mapped; the URL parser writes every
    // IPv6 literal in its canonical hex form, which ipaddr.js reads right.
    const canonical =
      address.includes(':') && address.includes('.') ? bareHost(new URL(`http://[${address}]`).hostname) : address;
    parsed = ipaddr.process(canonical);
  } catch {
    return 'not an IP address';
  }
  if (parsed.kind() === 'ipv6') {
    const parts = (parsed as ipaddr.IPv6).parts;
    // ::/96 (but :: and ::1, caught as unspecified and loopback): the
    // IPv4-compatible form, which some stacks still route to the IPv4 address.
    if (parts.slice(0, 6).every((p) => p === 0) && (parts[6] ?? 0) !== 0) return 'ipv4Compatible';
    if ((parts[4] === 0 || parts[4] === 0x200) && parts[5] === 0x5efe) {
      const inner = ipaddr.fromByteArray([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
      if (inner.range() !== 'unicast') return `isatap embedding a ${inner.range()} IPv4 address`;
    }
  }
  const range = parsed.range();
  return range === 'unicast' ? undefined : range;
}

/** Thrown when a webhook URL's host is, or resolves to, an address the guard refuses. */
export class RefusedAddressError extends Error {
  constructor(host: string, address: string, range: string) {
    super(
      `refused: ${host === address ? address : `${host} resolves to ${address}`}, a ${range} address ` +
        '(serve --webhooks-allow-private allows it)',
    );
    this.name = 'RefusedAddressError';
  }
}

/** Brackets off an IPv6 literal as URL.hostname gives it ("[::1]" -> "::1"). */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** Throws RefusedAddressError when the host is an IP literal the guard refuses (lookups are not made for literals). */
export function checkLiteralHost(hostname: string): void {
  const host = bareHost(hostname);
  if (isIP(host) === 0) return;
  const range = addressRefusal(host);
  if (range) throw new RefusedAddressError(host, host, range);
}

/**
 * A DNS lookup for http.request that checks every address a name resolves
 * to and hands only checked addresses to the connection, so a name cannot
 * pass the check and then connect elsewhere (DNS rebinding).
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    for (const a of addresses) {
      const range = addressRefusal(a.address);
      if (range) return callback(new RefusedAddressError(hostname, a.address, range), '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    callback(null, first.address, first.family);
  });
};

/** For `webhook add`: the addresses of a URL's host the guard would refuse (empty when none, or when it does not resolve). */
export async function refusedAddresses(hostname: string): Promise<{ address: string; range: string }[]> {
  const host = bareHost(hostname);
  const addresses =
    isIP(host) !== 0
      ? [host]
      : await new Promise<string[]>((resolve) =>
          dnsLookup(host, { all: true }, (error, all) => resolve(error ? [] : all.map((a) => a.address))),
        );
  return addresses.flatMap((address) => {
    const range = addressRefusal(address);
    return range ? [{ address, range }] : [];
  });
}
