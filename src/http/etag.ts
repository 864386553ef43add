import type { IncomingHttpHeaders } from 'node:http';

// One entity tag of a list (RFC 9110 8.8.3): W/ for weak, then the quoted tag.
const LISTED_TAG = /\s*(W\/)?("[^"]*")\s*(?:,|$)/y;

/**
 * Whether a GET may be answered 304 Not Modified: the request's
 * If-None-Match is "*" or lists `etag`, compared weakly as RFC 9110 13.1.2
 * says for this header (W/"x" matches "x"). A Cache-Control: no-cache in
 * the request changes nothing: it speaks to caches on the way, and fetch()
 * adds it to every request that sets If-None-Match by hand.
 */
export function notModified(headers: IncomingHttpHeaders, etag: string): boolean {
  const header = headers['if-none-match'];
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  LISTED_TAG.lastIndex = 0;
  while (LISTED_TAG.lastIndex < header.length) {
    const m = LISTED_TAG.exec(header);
    if (m === null) return false;
    if (m[2] === etag) return true;
  }
  return false;
}
