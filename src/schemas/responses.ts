import { Type } from '@sinclair/typebox';
import { ErrorBody } from './error.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed or a value is invalid; nothing was changed',
  401: 'Missing, unknown, expired or revoked bearer token',
  403: 'The token lacks the scope this operation needs',
  404: 'No plant with this id belongs to the caller',
  406: 'The Accept header admits none of the media types this operation answers with',
  409: 'The caller already has a plant with this id, with a different name or tag',
  413: 'The request body is larger than the configured limit',
  414: 'The id in the path is far longer than any id (a 64-bit id has at most 20 digits)',
  415: 'The request body is not application/json',
  429: "Over the rate limit: the token's owner made too many requests, or this address sent too many invalid tokens",
  500: 'Unexpected server error (details are in the server log only)',
  503: 'The store is unreachable or the server is shutting down',
};

const HEADERS: Record<number, Record<string, { type: 'string'; description: string }>> = {
  401: {
    'www-authenticate': {
      type: 'string',
      description: 'Bearer realm="plants", with error="invalid_token" when a token was sent but is not valid',
    },
  },
  403: {
    'www-authenticate': {
      type: 'string',
      description: 'Bearer realm="plants", error="insufficient_scope", scope="<the scope needed>"',
    },
  },
  429: {
    'retry-after': { type: 'string', description: 'Seconds until the limit resets' },
    'ratelimit-limit': { type: 'string', description: 'Requests (or failed authentications) allowed per window' },
    'ratelimit-remaining': { type: 'string', description: 'Left in the current window: 0' },
    'ratelimit-reset': { type: 'string', description: 'Seconds until the window ends' },
  },
};

// What any operation may answer, whatever it does: the server refuses these
// before the operation's own checks, or instead of running it. Documented
// once per operation as `default`, so that a client generated from the
// document, or a conformance checker, expects them. Only the document has it:
// in a route's own schema, `default` would also be the serializer of every
// status the route does not list.
const OTHER_ERRORS =
  'Another error, with the same Error body. Besides the statuses listed, any operation may answer: ' +
  '400 when the request cannot be parsed (malformed HTTP, no Host header or more than one, more than one ' +
  'Content-Type, a Transfer-Encoding that does not end in chunked, a URL that is not valid, the target * with a ' +
  "method other than OPTIONS, an absolute-form target whose host is not the Host header's); " +
  '408 when the request head or body does not arrive in time; ' +
  '417 for an Expect other than 100-continue; ' +
  '431 when the request line and headers are too large; ' +
  '501 for other transfer codings before chunked (Transfer-Encoding: gzip, chunked); ' +
  '505 for an HTTP version other than 1.0 and 1.1; ' +
  '500 on an unexpected error; ' +
  '503 while the server is shutting down, or when the request is not answered within the request timeout.';

/** The `default` response of every operation in the OpenAPI document. */
export const otherErrors = Type.Ref(ErrorBody, { description: OTHER_ERRORS });

/** Response entries for the given error statuses, all pointing at the one Error schema. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      Type.Ref(ErrorBody, { description: DESCRIPTIONS[s] ?? 'Error', ...(HEADERS[s] ? { headers: HEADERS[s] } : {}) }),
    ]),
  );
}
