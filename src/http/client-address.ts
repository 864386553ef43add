import type { IncomingMessage } from 'node:http';
import proxyaddr from '@fastify/proxy-addr';
import parseForwarded from 'forwarded-parse';
import ipaddr from 'ipaddr.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The client's address: the peer's, or behind a trusted proxy the nearest
     * hop its headers name that is not a trusted proxy (clientAddress).
     */
    readonly client: string;
  }
}

/** Whether the hop at `address` (0: the peer) is a trusted proxy. */
export type TrustProxy = (address: string, hop: number) => boolean;

/** The trust rule of --trust-proxy's addresses and ranges (none: every hop is the client). */
export function trustProxy(proxies: readonly string[]): TrustProxy {
  return proxies.length === 0 ? () => false : proxyaddr.compile([...proxies]);
}

// A hop that is no address (for=unknown, an obfuscated _name, garbage) is kept as a key, cut short.
const MAX_HOP_CHARS = 64;

/** An address as one spelling (::ffff:10.0.0.1 is 10.0.0.1), or the hop's text cut short when it is none. */
function canonical(hop: string): string {
  return ipaddr.isValid(hop) ? ipaddr.process(hop).toString() : hop.slice(0, MAX_HOP_CHARS);
}

/** The address of a Forwarded `for=` value: 192.0.2.1, "192.0.2.1:4711", "[2001:db8::1]:4711", or the token itself. */
function forwardedFor(value: string): string {
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(value);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(value);
  return withPort ? withPort[1]! : value;
}

/**
 * The nearest untrusted hop the Forwarded header names, or undefined when it
 * cannot be read (a malformed header, or an element without `for=`).
 */
function viaForwarded(req: IncomingMessage, header: string, trust: TrustProxy): string | undefined {
  let elements: Record<string, string>[];
  try {
    elements = parseForwarded(header);
  } catch {
    return undefined;
  }
  const hops = elements.map((element) => element.for);
  if (hops.some((hop) => hop === undefined)) return undefined;
  // From the peer outwards: the last element was added by the nearest proxy.
  const chain = [req.socket.remoteAddress ?? '', ...hops.reverse().map((hop) => forwardedFor(hop!))];
  let i = 0;
  while (i < chain.length - 1 && trust(chain[i]!, i)) i++;
  return chain[i];
}

/**
 * Who sent a request. The peer's address, unless the peer is a trusted proxy:
 * then the nearest hop that is not one, named by the `Forwarded` header
 * (RFC 7239) or `X-Forwarded-For` (read by proxy-addr, as Fastify's own
 * trustProxy does). Each proxy adds the address it got the request from, so
 * the hops a client wrote itself lie beyond it and are never reached.
 *
 * A proxy that writes only one of the two headers passes on what a client
 * put in the other. So when a request carries both and they name different
 * clients (or Forwarded cannot be read), neither is believed: the client is
 * the proxy itself, which puts such requests together in one place for the
 * failed-authentication limit, away from every honest client.
 */
export function clientAddress(req: IncomingMessage, trust: TrustProxy): string {
  const peer = req.socket.remoteAddress ?? '';
  if (!trust(peer, 0)) return canonical(peer);
  const forwarded = req.headers.forwarded;
  const xff = req.headers['x-forwarded-for'];
  const fromXff = xff === undefined ? undefined : canonical(proxyaddr(req, trust));
  if (forwarded === undefined) return fromXff ?? canonical(peer);
  const fromForwarded = viaForwarded(req, forwarded, trust);
  const chosen = fromForwarded === undefined ? undefined : canonical(fromForwarded);
  if (chosen === undefined || (fromXff !== undefined && fromXff !== chosen)) return canonical(peer);
  return chosen;
}
