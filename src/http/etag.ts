import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import fresh from 'fresh';

/**
 * A strong entity tag for a representation made of `parts` (a body, and
 * the headers that belong with it, such as a list page's Link): a digest of
 * their bytes, so equal answers get equal tags on every process and after
 * restarts, and any change of a byte changes the tag. Strong: a match means
 * the bytes are the same (this service never compresses or reformats an
 * answer on its way out).
 */
export function entityTag(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part, 'utf8').update('\0');
  return `"${hash.digest('base64url').slice(0, 27)}"`;
}

/**
 * Whether a GET may be answered 304 Not Modified: the request's
 * If-None-Match lists `etag` (weak comparison, as RFC 9110 13.1.2 says for
 * this header) or is "*". A request with Cache-Control: no-cache wants the
 * whole answer and gets it.
 */
export function notModified(headers: IncomingHttpHeaders, etag: string): boolean {
  return headers['if-none-match'] !== undefined && fresh(headers, { etag });
}
