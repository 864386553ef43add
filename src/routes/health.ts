import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { errorResponses } from '../schemas/responses.js';
import type { Store } from '../store/store.js';

const Status = Type.Object({ status: Type.String() }, { additionalProperties: false });

export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'liveness',
        summary: 'Liveness: the process is serving requests',
        tags: ['health'],
        response: { 200: { ...Status, description: 'Alive' } },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'readiness',
        summary: 'Readiness: the store answers',
        tags: ['health'],
        response: { 200: { ...Status, description: 'Ready' }, ...errorResponses(500, 503) },
      },
    },
    async () => {
      await store.ping();
      return { status: 'ready' };
    },
  );
};
