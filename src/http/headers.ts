/**
 * Sent on every response, errors included. A JSON API needs few: no sniffing,
 * no caching of plant data, and a policy that lets nothing load or frame it.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};
