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
 * can read them. Any other OPTIONS keeps the service's own answer (204 with
 * Allow, or 404).
 *
 * Registered on the root instance (not as an encapsulated plugin) so that its
 * hooks reach every route.
 */
export async function registerCors(app: FastifyInstance, { origin }: CorsOptions): Promise<void> {
  const allowed: FastifyCorsOptions = {
    origin: origin === '*' ? '*' : origin.split(',').map((o) => o.trim()),
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    // Link carries the next page; the others explain an answer.
    exposedHeaders: ['Link', 'X-Request-Id', 'WWW-Authenticate', 'Allow'],
    // No cookies: the API authenticates with bearer tokens only.
    credentials: false,
    maxAge: 600,
    strictPreflight: false,
  };
  const notPreflight: FastifyCorsOptions = { origin: false };
  await app.register(fastifyCors, {
    hideOptionsRoute: true,
    delegator: (request, callback) => {
      const preflightOrPlain =
        request.method !== 'OPTIONS' ||
        (request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined);
      callback(null, preflightOrPlain ? allowed : notPreflight);
    },
  });
}
