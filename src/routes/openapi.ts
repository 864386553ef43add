import type { FastifyPluginAsync } from 'fastify';

export const openapiRoute: FastifyPluginAsync = async (app) => {
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    void reply.header('cache-control', 'public, max-age=300');
    return app.swagger();
  });
};
