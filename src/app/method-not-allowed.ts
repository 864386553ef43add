import { METHODS as NODE_METHODS } from 'node:http';
import type { FastifyInstance, HTTPMethods, onRequestHookHandler } from 'fastify';
import { takesToken, type Authenticate } from '../auth/bearer.js';
import { errors } from '../http/errors.js';

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
// Every other method Node's parser lets through (TRACE, PROPFIND, QUERY, …), so that a known path answers
// them 405 rather than 404. CONNECT never reaches the router: it is answered on the socket (request-framing.ts).
const OTHER_METHODS = NODE_METHODS.filter((m) => m !== 'CONNECT' && !(METHODS as string[]).includes(m));
const ALL_METHODS = [...METHODS, ...OTHER_METHODS] as HTTPMethods[];

/**
 * Collects the methods of every route as it is declared, then answers the
 * other methods on those paths with 405 and an Allow header (OPTIONS: 204).
 * On a path whose routes take a token, the 405 comes only after a valid
 * token (any scope): without one, 401 like every other request there.
 * Call it before the routes are registered, and call what it returns after them.
 */
export function trackMethods(app: FastifyInstance): (authenticate: Authenticate) => void {
  // Fastify routes only the methods it is told of; the others would all be 404.
  for (const m of OTHER_METHODS) if (!app.supportedMethods.includes(m)) app.addHttpMethod(m, { hasBody: true });
  const allowed = new Map<string, Set<string>>();
  const guarded = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.config && (route.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    const set = allowed.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) set.add(m);
    allowed.set(route.url, set);
    if (takesToken(route)) guarded.add(route.url);
  });
  return (authenticate) =>
    app.register(async (scope) => {
      for (const [url, set] of allowed) {
        // Fastify adds the trailing-slash twin of a plugin's "/" route (GET /docs/) without an onRoute call.
        const exists = (m: HTTPMethods) => set.has(m) || scope.hasRoute({ method: m, url });
        const allow = ALL_METHODS.filter(exists);
        const others = ALL_METHODS.filter((m) => !exists(m));
        if (others.length === 0) continue;
        const path = url.replace(/:(\w+)/g, '{$1}');
        scope.route({
          method: others,
          url,
          exposeHeadRoute: false,
          config: { methodNotAllowed: true },
          schema: { hide: true },
          // Answered from onRequest, before any body is read or parsed.
          onRequest: refuse(guarded.has(url) ? authenticate(null) : undefined, path, allow),
          handler: async () => undefined,
        });
      }
    });
}

/** OPTIONS: 204 with Allow, like a CORS preflight, which never carries a token; other methods: 405, after `guard`. */
function refuse(guard: onRequestHookHandler | undefined, path: string, allow: readonly string[]): onRequestHookHandler {
  return function methodNotAllowed(request, reply, done) {
    if (request.method === 'OPTIONS') {
      void reply
        .code(204)
        .header('allow', [...allow, 'OPTIONS'].join(', '))
        .send();
      return;
    }
    const answer = (error?: Error) =>
      done(error ?? errors.methodNotAllowed(request.method, path, [...allow, 'OPTIONS']));
    if (guard === undefined) return answer();
    guard.call(this, request, reply, answer);
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    methodNotAllowed?: boolean;
  }
}
