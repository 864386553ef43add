import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

export interface CorsOptions {
  /** "*", or origins separated by commas (validated by loadConfig). */
  origin: string;
}

/**
 * Lets browser pages on other origins call the API (--cors-origin). A
 * preflight (OPTIONS with Origin and Access-Control-Request-Method) is
 * answered here, before any route hook, so it needs no token: browsers never
 * send credentials with one. The requests that follow still need their
 * bearer token; their 401s and 403s carry the CORS headers too, so the page
 * can read them. Any other OPTIONS, and any request from an origin not
 * allowed, keeps the service's own answer (204 with Allow, or 404) without
 * any CORS header.
 *
 * Registered on the root instance (not as an encapsulated plugin) so that its
 * hooks reach every route.
 */
export async function registerCors(app: FastifyInstance, { origin }: CorsOptions): Promise<void> {
  const allowed: FastifyCorsOptions = {
    origin: origin === '*' ? '*' : origin.split(',').map((o) => o.trim()),
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    // If-None-Match: a page revalidates what it read before (conditional GET).
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'If-None-Match'],
    // Link carries the next page, ETag the tag to revalidate with; the others explain an answer (a 429 says when to retry).
    exposedHeaders: [
      'Link',
      'ETag',
      'X-Request-Id',
      'WWW-Authenticate',
      'Allow',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ],
    // No cookies: the API authenticates with bearer tokens only.
    credentials: false,
    maxAge: 600,
    strictPreflight: false,
  };
  const none: FastifyCorsOptions = { origin: false };
  const origins = new Set(origin === '*' ? [] : origin.split(',').map((o) => o.trim()));
  // A disallowed origin gets no Access-Control header at all, preflight or
  // not: the answer is the one a server without CORS would give.
  const allowedOrigin = (value: string | undefined) => value !== undefined && (origin === '*' || origins.has(value));
  await app.register(fastifyCors, {
    hideOptionsRoute: true,
    delegator: (request, callback) => {
      const from = request.headers.origin;
      const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
      if (from === undefined || !allowedOrigin(from)) return callback(null, none);
      callback(null, request.method !== 'OPTIONS' || preflight ? allowed : none);
    },
  });
}
