import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { errors } from '../http/errors.js';
import type { Authenticate } from '../auth/bearer.js';
import { ListQuery, NewPlant, NoQuery, Plant, PlantIdParams, PlantList } from '../schemas/plant.js';
import { errorResponses } from '../schemas/responses.js';
import type { PlantStore } from '../store/store.js';
import { ListPages, type ListedPage } from './page-cache.js';

export interface PlantRoutesOptions {
  plants: PlantStore;
  listDefaultLimit: number;
  listMaxLimit: number;
  /** Memory for reusing unchanged pages; 0 turns reuse off. */
  listCacheBytes: number;
  /** The bearer check for a scope, as an onRequest hook. */
  authenticate: Authenticate;
  /** Told after every create or delete that changed a plant (live streams look for its event at once). */
  changed?: () => void;
}

const security = [{ bearerAuth: [] }];
const authErrors = [401, 403, 500, 503];

function sendPage(reply: FastifyReply, page: ListedPage): FastifyReply {
  if (page.link !== undefined) void reply.header('link', page.link);
  return reply.type('application/json; charset=utf-8').send(page.body);
}

export const plantRoutes: FastifyPluginAsync<PlantRoutesOptions> = async (
  app,
  { plants, listDefaultLimit, listMaxLimit, listCacheBytes, authenticate, changed = () => {} },
) => {
  const pages = new ListPages(plants, listCacheBytes);

  app.post<{ Body: NewPlant }>(
    '/plants',
    {
      onRequest: authenticate('plants:write'),
      schema: {
        operationId: 'createPlant',
        summary: 'Create a plant',
        description:
          "Stores a plant for the token's owner and answers with its name and tag. The id may be a JSON integer or a string of decimal digits; send the string form from JavaScript, whose numbers round integers above 2^53. Sending the same id again with the same name and tag is a safe retry (200, nothing duplicated); with a different name or tag it is a 409. Needs the plants:write scope.",
        tags: ['plants'],
        security,
        body: NewPlant,
        response: {
          200: Type.Ref(Plant, { description: 'The stored plant' }),
          ...errorResponses(400, 409, 413, 415, ...authErrors),
        },
      },
    },
    async (request) => {
      const { id, name, tag } = request.body;
      const outcome = await plants.create(request.principal.owner, { id, name, tag });
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
        description: `The caller's plants in insertion order, at most \`limit\` (default ${listDefaultLimit}, at most ${listMaxLimit}). When more remain, a \`Link: <...>; rel="next"\` header gives the URL of the next page. Needs the plants:read scope.`,
        tags: ['plants'],
        security,
        querystring: ListQuery,
        response: {
          200: {
            ...PlantList,
            description: 'A page of plants',
            headers: {
              link: {
                type: 'string',
                description: 'Present when more plants remain: <URL of the next page>; rel="next"',
              },
            },
          },
          ...errorResponses(400, ...authErrors),
        },
      },
    },
    (request, reply) => {
      const limit = Math.min(request.query.limit ?? listDefaultLimit, listMaxLimit);
      // The store writes the body as the 200 schema above would.
      const page = pages.page(request.principal.owner, limit, request.query.cursor);
      return page instanceof Promise ? page.then((p) => sendPage(reply, p)) : sendPage(reply, page);
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
          ...errorResponses(400, 404, 414, ...authErrors),
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
