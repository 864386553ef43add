import { Type } from '@sinclair/typebox';
import { ErrorBody } from './error.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed or a value is invalid; nothing was changed',
  401: 'Missing, unknown, expired or revoked bearer token',
  403: 'The token lacks the scope this operation needs',
  404: 'No plant with this id belongs to the caller',
  409: 'The caller already has a plant with this id, with a different name or tag',
  413: 'The request body is larger than the configured limit',
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

/** Response entries for the given error statuses, all pointing at the one Error schema. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      Type.Ref(ErrorBody, { description: DESCRIPTIONS[s] ?? 'Error', ...(HEADERS[s] ? { headers: HEADERS[s] } : {}) }),
    ]),
  );
}
