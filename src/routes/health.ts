import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { errors } from '../http/errors.js';
import type { JwksStatus } from '../auth/jwks.js';
import { errorResponses } from '../schemas/responses.js';
import type { Store } from '../store/store.js';

const Status = Type.Object({ status: Type.String() }, { additionalProperties: false });

const Readiness = Type.Object(
  {
    status: Type.String(),
    jwks: Type.Optional(
      Type.Object(
        {
          keys: Type.Integer({ description: 'Signing keys in the set last fetched' }),
          fetchedAt: Type.String({ format: 'date-time', description: 'When the key set was last fetched' }),
          stale: Type.Boolean({ description: 'The last fetch failed; the keys fetched before are still used' }),
        },
        { additionalProperties: false, description: 'Present when JWT access tokens are accepted' },
      ),
    ),
  },
  { additionalProperties: false },
);

export interface HealthOptions {
  store: Pick<Store, 'ping'>;
  /** The JWT signing keys, when JWTs are accepted. */
  jwks?: { status(): JwksStatus } | undefined;
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { store, jwks }) => {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'liveness',
        summary: 'Liveness: the process is serving requests',
        description:
          'Answers 200 while the process serves requests, whether or not the store answers. No token needed.',
        tags: ['health'],
        security: [],
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
        summary: 'Readiness: the store answers and, with JWTs on, the signing keys were fetched',
        description:
          'Answers 200 while the store answers a query (and, when JWT access tokens are accepted, once the signing keys were fetched from the issuer), 503 otherwise. No token needed.',
        tags: ['health'],
        security: [],
        response: { 200: { ...Readiness, description: 'Ready' }, ...errorResponses(500, 503) },
      },
    },
    async () => {
      await store.ping();
      if (!jwks) return { status: 'ready' };
      // Not ready until the keys were fetched once: a JWT sent here before
      // would get a 401, which clients do not retry. Once fetched, an issuer
      // outage keeps the instance ready: the keys it has keep working.
      const { ready, keys, fetchedAt, stale } = jwks.status();
      if (!ready) throw errors.unavailable('the JWT signing keys have not been fetched from the issuer yet');
      return { status: 'ready', jwks: { keys, fetchedAt, stale } };
    },
  );
};
