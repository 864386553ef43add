import type { FastifyInstance, HTTPMethods } from 'fastify';
import { errors } from '../http/errors.js';

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Collects the methods of every route as it is declared, then answers the
 * other methods on those paths with 405 and an Allow header (OPTIONS: 204).
 * Call it before the routes are registered, and call what it returns after them.
 */
export function trackMethods(app: FastifyInstance): () => void {
  const allowed = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.config && (route.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    const set = allowed.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) set.add(m);
    allowed.set(route.url, set);
  });
  return () =>
    app.register(async (scope) => {
      for (const [url, set] of allowed) {
        // Fastify adds the trailing-slash twin of a plugin's "/" route (GET /docs/) without an onRoute call.
        const exists = (m: HTTPMethods) => set.has(m) || scope.hasRoute({ method: m, url });
        const allow = METHODS.filter(exists);
        const others = METHODS.filter((m) => !exists(m));
        if (others.length === 0) continue;
        const path = url.replace(/:(\w+)/g, '{$1}');
        scope.route({
          method: others,
          url,
          exposeHeadRoute: false,
          config: { methodNotAllowed: true },
          schema: { hide: true },
          // Answered from onRequest, before any body is read or parsed.
          onRequest: async (request, reply) => {
            if (request.method === 'OPTIONS') {
              void reply.code(204).header('allow', [...allow, 'OPTIONS'].join(', '));
              return reply.send();
            }
            throw errors.methodNotAllowed(request.method, path, [...allow, 'OPTIONS']);
          },
          handler: async () => undefined,
        });
      }
    });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    methodNotAllowed?: boolean;
  }
}
