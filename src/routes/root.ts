import type { FastifyPluginAsync } from 'fastify';

/** What GET / answers: where the API, its reference page and its document are. */
export const ROOT_LINKS = {
  service: 'plant-store',
  plants: '/plants',
  docs: '/docs',
  openapi: '/openapi.json',
} as const;

/**
 * GET /: a small JSON pointer for whoever opens the server's address, instead
 * of a bare 404. Needs no token, like the document it points to.
 */
export const rootRoute: FastifyPluginAsync = async (app) => {
  const body = JSON.stringify(ROOT_LINKS);
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(body),
  );
};
