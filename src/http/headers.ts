/**
 * Sent on every response, errors included. A JSON API needs few: no sniffing,
 * no caching of plant data, and a policy that lets nothing load or frame it.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

/**
 * How many times a header appears in a request's raw headers (`name` in
 * lower case). Node keeps only the first of several Host or Authorization
 * headers, where a proxy in front might use another.
 */
export function headerCount(rawHeaders: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const header = rawHeaders[i]!;
    if (header.length === name.length && header.toLowerCase() === name) n++;
  }
  return n;
}
