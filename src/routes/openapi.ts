import type { FastifyPluginAsync } from 'fastify';

/** GET /openapi.json: the document, serialized once. Like every response it is sent with Cache-Control: no-store. */
export const openapiRoute: FastifyPluginAsync = async (app) => {
  let body: string | undefined;
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    body ??= JSON.stringify(app.swagger());
    return reply.type('application/json; charset=utf-8').send(body);
  });
};
