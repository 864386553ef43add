// The closed catalog of errors this service answers with. Every non-2xx
// response is built from one of these, so status, message and headers stay
// consistent across routes, hooks and stores.

const REALM = 'plants';

/**
 * Whether a status says the server failed. A 501 or a 505 is a 5xx, yet it
 * refuses what the request itself asked for (a transfer coding this server
 * does not implement, an HTTP version it does not speak), which only the
 * client can change: like a 4xx, it is no failure to log with its cause or to
 * alert on.
 */
export const isServerFailure = (status: number): boolean => status >= 500 && status !== 501 && status !== 505;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/**
 * What every error response carries, however it is sent: the body
 * `{"error":<status>,"message":"..."}` and its Content-Type and Content-Length.
 */
export function errorResponse(error: AppError): {
  body: string;
  headers: { 'content-type': string; 'content-length': number };
} {
  const body = JSON.stringify({ error: error.statusCode, message: error.message });
  return {
    body,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) },
  };
}

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'MISSING_CREDENTIALS'
  | 'INVALID_TOKEN'
  | 'INSUFFICIENT_SCOPE'
  | 'QUOTA_EXCEEDED'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_ACCEPTABLE'
  | 'CONFLICT'
  | 'PRECONDITION_FAILED'
  | 'RANGE_NOT_SATISFIABLE'
  | 'EXPECTATION_FAILED'
  | 'NOT_IMPLEMENTED'
  | 'HTTP_VERSION_NOT_SUPPORTED'
  | 'TOO_MANY_REQUESTS'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'URI_TOO_LONG'
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'INTERNAL'
  | 'UNAVAILABLE';

const quote = (s: string) => s.replace(/["\\]/g, '');

// The same words on every 401, whatever the store holds, so they tell a
// caller nothing about which tokens exist; they tell a locked-out operator
// what to run. A JWT comes from an identity provider, so its 401 carries no
// such hint.
const TOKEN_HINT = " (the server's operator creates tokens with: plant-store token create --owner NAME)";

export const errors = {
  badRequest: (message: string) => new AppError('BAD_REQUEST', 400, message),
  missingCredentials: () =>
    new AppError(
      'MISSING_CREDENTIALS',
      401,
      `authentication required: send an Authorization: Bearer <token> header${TOKEN_HINT}`,
      { 'www-authenticate': `Bearer realm="${REALM}"` },
    ),
  invalidToken: (why: string, kind: 'opaque' | 'jwt' = 'opaque') =>
    new AppError('INVALID_TOKEN', 401, `invalid bearer token: ${why}${kind === 'opaque' ? TOKEN_HINT : ''}`, {
      'www-authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="${quote(why)}"`,
    }),
  /** The admin API's 401: its secret is the file --admin-token-file names, never a plant token. */
  adminUnauthorized: (given: boolean) =>
    new AppError(
      given ? 'INVALID_TOKEN' : 'MISSING_CREDENTIALS',
      401,
      given
        ? 'invalid admin token: send the secret of the file --admin-token-file names'
        : 'authentication required: send Authorization: Bearer <the secret of the file --admin-token-file names>',
      { 'www-authenticate': 'Bearer realm="plant-store-admin"' },
    ),
  insufficientScope: (scope: string) =>
    new AppError('INSUFFICIENT_SCOPE', 403, `this token lacks the ${scope} scope`, {
      'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"`,
    }),
  /** The owner's cap on plants (--max-plants-per-owner): a 403, as the token may not store more, whatever it retries. */
  quotaExceeded: (message: string) => new AppError('QUOTA_EXCEEDED', 403, message),
  notFound: (message: string) => new AppError('NOT_FOUND', 404, message),
  methodNotAllowed: (method: string, path: string, allow: readonly string[]) =>
    new AppError('METHOD_NOT_ALLOWED', 405, `${method} is not allowed on ${path}; allowed: ${allow.join(', ')}`, {
      allow: allow.join(', '),
    }),
  /** A method no path allows (CONNECT): nothing to list in Allow. */
  methodNotAllowedAnywhere: (message: string) => new AppError('METHOD_NOT_ALLOWED', 405, message),
  notAcceptable: (message: string) => new AppError('NOT_ACCEPTABLE', 406, message),
  conflict: (message: string) => new AppError('CONFLICT', 409, message),
  preconditionFailed: () =>
    new AppError('PRECONDITION_FAILED', 412, 'a precondition (If-Match, If-Unmodified-Since) does not hold'),
  rangeNotSatisfiable: () => new AppError('RANGE_NOT_SATISFIABLE', 416, 'the requested range is not satisfiable'),
  expectationFailed: (message: string) => new AppError('EXPECTATION_FAILED', 417, message),
  notImplemented: (message: string) => new AppError('NOT_IMPLEMENTED', 501, message),
  httpVersionNotSupported: (version: string) =>
    new AppError(
      'HTTP_VERSION_NOT_SUPPORTED',
      505,
      `HTTP/${version.slice(0, 10)} is not supported: this server speaks HTTP/1.1 (and HTTP/1.0)`,
    ),
  payloadTooLarge: (limit: number) =>
    new AppError('PAYLOAD_TOO_LARGE', 413, `request body is larger than the limit of ${limit} bytes`),
  unsupportedMediaType: (contentType: string | undefined) =>
    new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      contentType
        ? `unsupported Content-Type "${contentType.slice(0, 100)}": send application/json (UTF-8)`
        : 'missing Content-Type: send application/json',
    ),
  unsupportedEncoding: (encoding: string) =>
    new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      `unsupported Content-Encoding "${encoding.slice(0, 100)}": send the body uncompressed`,
    ),
  /** Over a rate limit; the limiter sets Retry-After and the RateLimit headers. */
  tooManyRequests: (message: string, headers: Readonly<Record<string, string>> = {}) =>
    new AppError('TOO_MANY_REQUESTS', 429, message, headers),
  uriTooLong: () => new AppError('URI_TOO_LONG', 414, 'the request URL is too long'),
  headersTooLarge: () => new AppError('HEADERS_TOO_LARGE', 431, 'the request headers are too large'),
  requestTimeout: () => new AppError('REQUEST_TIMEOUT', 408, 'the request did not arrive in time'),
  internal: () => new AppError('INTERNAL', 500, 'internal server error'),
  unavailable: (what = 'the store is unavailable, try again shortly', retryAfterSeconds?: number) =>
    new AppError(
      'UNAVAILABLE',
      503,
      what,
      retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) },
    ),
} as const;
