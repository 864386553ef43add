import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../http/errors.js';
import { notModified } from '../http/etag.js';
import type { Authenticate } from '../auth/bearer.js';
import {
  ConditionalGetHeaders,
  ListQuery,
  NewPlant,
  NoQuery,
  Plant,
  PlantIdParams,
  PlantList,
} from '../schemas/plant.js';
import { NewPlantOrBatch } from '../schemas/plant-batch.js';
import { errorResponses } from '../schemas/responses.js';
import { entityTag } from '../store/entity-tag.js';
import type { JsonPage, PlantLimits, PlantStore } from '../store/store.js';
import { createBatch } from './plant-batch.js';

export interface PlantRoutesOptions {
  plants: PlantStore;
  listDefaultLimit: number;
  listMaxLimit: number;
  /** The bearer check for a scope, as an onRequest hook. */
  authenticate: Authenticate;
  /** Told after every create or delete that changed a plant (live streams look for its event at once). */
  changed?: () => void;
  /** Most plants in one POST /plants array. */
  maxBatch?: number;
  /** Most plants one owner may have (--max-plants-per-owner); null: no cap. */
  maxPlantsPerOwner?: number | null;
}

const security = [{ bearerAuth: [] }];
const NEW_PLANT_EXAMPLE_ERROR = NewPlant.properties.name['x-error-message'] as string;
const LIMIT_EXAMPLE_ERROR = ListQuery.properties.limit['x-error-message'] as string;
/** The errors of the token check (its 403 naming `scope`), and those of the server. */
const authErrors = (scope: 'plants:read' | 'plants:write') =>
  [401, [403, `this token lacks the ${scope} scope`], 500, 503] as const;

const ETAG_HEADER = {
  etag: {
    type: 'string',
    description:
      "A strong entity tag of this answer (a digest of its body, and of a list page's next cursor). Send it back " +
      'in If-None-Match: while the answer is the same, the server answers 304 with no body; any write that changes ' +
      'the answer changes it.',
  },
} as const;

/** The 304 of a conditional GET, as the OpenAPI document shows it. */
const notModifiedResponse = Type.Null({
  description:
    'Not modified: If-None-Match named the current ETag (or was *). No body; the ETag is sent again. The token ' +
    'is checked first, as for any request.',
  headers: ETAG_HEADER,
});

/** An answer with its ETag, or 304 with no body when the request's If-None-Match names that tag. */
function sendTagged(request: FastifyRequest, reply: FastifyReply, body: string, etag: string): FastifyReply {
  void reply.header('etag', etag);
  if (notModified(request.headers, etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(body);
}

/** A list page, with the URL of the next page (the same list and limit, after its cursor) when more plants remain. */
function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  page: JsonPage,
  limit: number,
  tag: string | undefined,
): FastifyReply {
  const { next } = page;
  if (next !== undefined) {
    const url =
      tag === undefined
        ? `/plants?limit=${limit}&cursor=${next}`
        : `/plants?limit=${limit}&tag=${encodeURIComponent(tag)}&cursor=${next}`;
    void reply.header('link', `<${url}>; rel="next"`);
  }
  return sendTagged(request, reply, page.body, page.etag);
}

export const plantRoutes: FastifyPluginAsync<PlantRoutesOptions> = async (
  app,
  {
    plants,
    listDefaultLimit,
    listMaxLimit,
    authenticate,
    changed = () => {},
    maxBatch = 1000,
    maxPlantsPerOwner = null,
  },
) => {
  const limits: PlantLimits | undefined = maxPlantsPerOwner === null ? undefined : { maxPlants: maxPlantsPerOwner };
  const body = NewPlantOrBatch(maxBatch);

  app.post<{ Body: NewPlantOrBatch }>(
    '/plants',
    {
      onRequest: authenticate('plants:write'),
      schema: {
        operationId: 'createPlant',
        summary: 'Create a plant',
        description:
          "Stores a plant for the token's owner and answers with its name and tag. The id may be a JSON integer or a string of decimal digits; send the string form from JavaScript, whose numbers round integers above 2^53. Sending the same id again with the same name and tag is a safe retry (200, nothing duplicated); with a different name or tag it is a 409. Needs the plants:write scope.\n\n" +
          `A JSON array of 1 to ${maxBatch} plants is a batch, stored in one transaction, all or none, and answered with the array of plants in the order sent. An invalid element is a 400 naming its place and field (\`/2/name\`), an id given twice a 400, an id the owner has with another name or tag a 409 naming its place; then nothing is stored. An element identical to a stored plant is a replay, as for one plant. A batch is one request for the rate limit, and each plant it stores is one live event and one webhook event, in order.` +
          (maxPlantsPerOwner === null
            ? ''
            : ` An owner may have at most ${maxPlantsPerOwner} plants: a create or batch that would pass that is a 403, and stores nothing.`),
        tags: ['plants'],
        security,
        body,
        response: {
          200: Type.Ref(Plant, { description: 'The stored plant' }),
          ...errorResponses([400, NEW_PLANT_EXAMPLE_ERROR], 409, 413, 415, ...authErrors('plants:write')),
        },
      },
    },
    async (request, reply) => {
      if (Array.isArray(request.body)) {
        const sent = await createBatch(plants, request.principal.owner, request.body, limits, changed);
        return reply.type('application/json; charset=utf-8').send(sent);
      }
      const { id, name, tag } = request.body;
      const outcome = await plants.create(request.principal.owner, { id, name, tag }, limits);
      if (outcome === 'created') changed();
      if (outcome === 'conflict') {
        throw errors.conflict(`a plant with id ${id} already exists with a different name or tag`);
      }
      return tag === undefined ? { name } : { name, tag };
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/plants',
    {
      onRequest: authenticate('plants:read'),
      schema: {
        operationId: 'listPlants',
        summary: 'List plants',
        description: `The caller's plants in insertion order, at most \`limit\` (default ${listDefaultLimit}, at most ${listMaxLimit}). With \`tag\`, only the plants with exactly that tag. When more remain, a \`Link: <...>; rel="next"\` header gives the URL of the next page (of the same list: the tag is kept); a cursor works only in the list it came from. Each page carries an \`ETag\`: send it back in \`If-None-Match\`, and while the page is unchanged the answer is 304 with no body. Needs the plants:read scope.`,
        tags: ['plants'],
        security,
        querystring: ListQuery,
        headers: ConditionalGetHeaders,
        response: {
          200: {
            ...PlantList,
            description: 'A page of plants',
            headers: {
              link: {
                type: 'string',
                description: 'Present when more plants remain: <URL of the next page>; rel="next"',
              },
              ...ETAG_HEADER,
            },
          },
          304: notModifiedResponse,
          ...errorResponses([400, LIMIT_EXAMPLE_ERROR], ...authErrors('plants:read')),
        },
      },
    },
    (request, reply) => {
      const { cursor, tag } = request.query;
      const limit = Math.min(request.query.limit ?? listDefaultLimit, listMaxLimit);
      // The store writes the body as the 200 schema above would, and may answer from memory without a promise.
      const page = plants.page(request.principal.owner, limit, cursor, tag === undefined ? undefined : { tag });
      return page instanceof Promise
        ? page.then((p) => sendPage(request, reply, p, limit, tag))
        : sendPage(request, reply, page, limit, tag);
    },
  );

  app.get<{ Params: PlantIdParams }>(
    '/plants/:id',
    {
      onRequest: authenticate('plants:read'),
      schema: {
        operationId: 'getPlant',
        summary: 'Get a plant',
        description:
          "The caller's plant with this id: its name and tag. An id the caller does not have, including another owner's, is a 404. The answer carries an `ETag`: send it back in `If-None-Match`, and while the plant is unchanged the answer is 304 with no body. Needs the plants:read scope.",
        tags: ['plants'],
        security,
        params: PlantIdParams,
        querystring: NoQuery,
        headers: ConditionalGetHeaders,
        response: {
          200: Type.Ref(Plant, { description: 'The plant', headers: ETAG_HEADER }),
          304: notModifiedResponse,
          ...errorResponses(400, 404, 414, ...authErrors('plants:read')),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const plant = await plants.get(request.principal.owner, id);
      if (plant === undefined) throw errors.notFound(`no plant with id ${id}`);
      // Written here as the 200 schema would (name, then tag when there is one), so the ETag is of these bytes.
      const body = JSON.stringify(
        plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag },
      );
      return sendTagged(request, reply, body, entityTag(body));
    },
  );

  app.delete<{ Params: PlantIdParams }>(
    '/plants/:id',
    {
      onRequest: authenticate('plants:write'),
      schema: {
        operationId: 'deletePlant',
        summary: 'Delete a plant',
        description:
          "Deletes the caller's plant with this id and answers 204 with no body. An id the caller does not have, including another owner's, is a 404. Needs the plants:write scope.",
        tags: ['plants'],
        security,
        params: PlantIdParams,
        querystring: NoQuery,
        response: {
          204: Type.Null({ description: 'Deleted; no body' }),
          ...errorResponses(400, 404, 414, ...authErrors('plants:write')),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!(await plants.delete(request.principal.owner, id))) throw errors.notFound(`no plant with id ${id}`);
      changed();
      return reply.code(204).send();
    },
  );
};
