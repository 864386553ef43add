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

// What each status answers, as the server words it: the example the
// document shows (and /docs fills in) for an error. An operation can name its
// own (its 400's field, its 403's scope). The OpenAPI tests check each example
// against the messages the server really sends.
const EXAMPLES: Record<number, string> = {
  400: 'id must be an integer between -9223372036854775808 and 9223372036854775807',
  401:
    "authentication required: send an Authorization: Bearer <token> header (the server's operator creates tokens " +
    'with: plant-store token create --owner NAME)',
  403: 'this token lacks the plants:read scope',
  404: 'no plant with id 9007199254740993',
  406: 'this is a Server-Sent Events stream: send Accept: text/event-stream (the Accept header sent, "application/json", does not admit it)',
  409: 'a plant with id 9007199254740993 already exists with a different name or tag',
  413: 'request body is larger than the limit of 1048576 bytes',
  414: 'the request URL is too long',
  415: 'unsupported Content-Type "text/plain": send application/json (UTF-8)',
  429: 'rate limit exceeded: each token owner may make 100 requests per minute; retry in 42 s',
  500: 'internal server error',
  503: 'the store is unavailable, try again shortly',
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

/**
 * An error response entry: the one Error schema, with `example` beside it
 * (in the media type, where @fastify/swagger keeps it: it drops the
 * siblings of a $ref).
 */
/** A named example of an error answer, as OpenAPI's `examples` holds it. */
export interface ErrorExample {
  summary: string;
  value: ErrorBody;
}

function errorEntry(
  description: string,
  example: ErrorBody | Record<string, ErrorExample> | undefined,
  headers?: Record<string, unknown>,
) {
  // In the media type, which the document keeps as it is: examples beside a $ref would be dropped.
  const shown = example === undefined ? {} : 'error' in example ? { example } : { examples: example };
  return {
    description,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: Type.Ref(ErrorBody), ...shown } },
  };
}

/** The `default` response of every operation in the OpenAPI document. */
export const otherErrors = errorEntry(OTHER_ERRORS, { error: 503, message: 'the server is shutting down, try again' });

/**
 * Response entries for the given error statuses, all pointing at the one
 * Error schema, each with its example: the status's usual message, or the
 * one given with it (`[400, 'limit must be …']`).
 */
export function errorResponses(
  ...statuses: (number | readonly [status: number, example: string])[]
): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((entry) => {
      const [s, message] = typeof entry === 'number' ? [entry, EXAMPLES[entry]] : entry;
      const example = message === undefined ? undefined : { error: s, message };
      return [s, errorEntry(DESCRIPTIONS[s] ?? 'Error', example, HEADERS[s])];
    }),
  );
}

/**
 * The response entry of one error status with several named examples of
 * what the server answers, and a description of its own when the status's
 * usual one does not fit the operation.
 */
export function errorResponseWithExamples(
  status: number,
  examples: Record<string, ErrorExample>,
  description = DESCRIPTIONS[status] ?? 'Error',
): Record<number, unknown> {
  return { [status]: errorEntry(description, examples, HEADERS[status]) };
}
