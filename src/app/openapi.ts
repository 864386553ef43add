import swagger from '@fastify/swagger';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { API_VERSION } from '../schemas/api-version.js';
import { ErrorBody } from '../schemas/error.js';
import { otherErrors } from '../schemas/responses.js';
import { NewPlant, NewPlantComponent, Plant } from '../schemas/plant.js';
import { batchExamples } from './batch-examples.js';
import { documentedBody, documentedCreated, oneOrBatchParts } from '../schemas/plant-batch.js';
import { WEBHOOK_SCHEMAS, WEBHOOKS } from '../schemas/webhook.js';

// Request bodies that are validated by one schema and documented by another:
// the document shows NewPlant as the interface's seed does (allOf Plant + id),
// while validation uses the equivalent closed object, whose errors name each
// field. The OpenAPI tests check that both accept the same bodies.
const documentedBodies = new Map<unknown, TSchema>([[NewPlant, Type.Ref(NewPlantComponent)]]);

/**
 * Registers the shared schemas and @fastify/swagger, which builds the OpenAPI
 * document (served at /openapi.json) from the routes' own schemas.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  for (const schema of [ErrorBody, Plant, NewPlantComponent, ...WEBHOOK_SCHEMAS]) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        version: API_VERSION,
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'Create, list and delete plants. Every plant operation needs a bearer token; each token belongs to an ' +
          'owner, who sees only their own plants.\n\n' +
          'Ids are 64-bit integers. Send them as JSON integers or, from JavaScript and other languages whose ' +
          'numbers are doubles, as strings of decimal digits: a number above 2^53 is rounded before it leaves ' +
          'such a client, and the service cannot tell.',
      },
      servers: [{ url: '/', description: 'The server that serves this document' }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'plnt_ opaque token, or JWT',
            description:
              'An opaque token made with `plant-store token create` (shown once, when it is created) or, when the ' +
              'server accepts them, a JWT access token from its OpenID Connect issuer.',
          },
        },
      },
      tags: [
        { name: 'plants', description: "Create, list and delete the caller's plants" },
        { name: 'health', description: 'Probes for load balancers and orchestrators; no token needed' },
        { name: 'webhooks', description: 'Events POSTed to the endpoints registered with plant-store webhook add' },
      ],
      webhooks: WEBHOOKS,
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url }) => {
      if (schema === undefined) return { schema, url };
      const batch = schema.body === undefined ? undefined : oneOrBatchParts(schema.body as TSchema);
      const body = batch ? documentedBody(batch.maxItems) : documentedBodies.get(schema.body);
      const response =
        schema.response === undefined
          ? undefined
          : {
              ...(schema.response as Record<string, unknown>),
              ...(batch && {
                200: documentedCreated,
                ...batchExamples(batch.maxItems),
              }),
              default: otherErrors,
            };
      return { schema: { ...schema, ...(body && { body }), ...(response && { response }) }, url };
    },
  });
}
