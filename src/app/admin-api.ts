import { createHash, timingSafeEqual } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { issueToken } from '../auth/tokens.js';
import type { Config } from '../config.js';
import { errors, type AppError } from '../http/errors.js';
import { ManageError } from '../manage/manage-error.js';
import { checkExpiresIn, checkOwner, checkScopes, listTokens, revokeToken } from '../manage/tokens.js';
import {
  addWebhook,
  checkEvents,
  checkWebhookUrl,
  listWebhooks,
  redeliverWebhook,
  removeWebhook,
  testWebhook,
} from '../manage/webhooks.js';
import { API_VERSION } from '../schemas/api-version.js';
import {
  ADMIN_EVENT_TYPES,
  AdminTokenList,
  AdminWebhookList,
  AdminWebhookRedelivery,
  AdminWebhookTest,
  CreatedAdminToken,
  CreatedAdminWebhook,
  IdParams,
  NewAdminToken,
  NewAdminWebhook,
  OwnerQuery,
} from '../schemas/admin.js';
import { ErrorBody } from '../schemas/error.js';
import { SCOPES, TooManyEndpointsError, type Store, type TokenRecord } from '../store/store.js';
import { registerJsonBodyParser } from './json-body.js';
import { validatorCompiler } from './validation.js';

/** What the admin API needs: its secret (--admin-token-file), the store, and the webhook settings. */
export interface AdminApiOptions {
  secret: string;
  store: Pick<Store, 'tokens' | 'webhooks'>;
  settings: Pick<
    Config,
    'db' | 'webhookKeyFile' | 'webhooksMaxEndpoints' | 'webhookTimeoutMs' | 'webhooksAllowPrivate'
  >;
}

// Bodies are a few fields; anything larger is no admin request.
const BODY_LIMIT = 16 * 1024;
const sha256 = (text: string) => createHash('sha256').update(text).digest();

const errorResponses = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody };

/** A ManageError as the catalogue's 400 or 404; anything else as it is. */
function asHttp(error: unknown): unknown {
  if (error instanceof ManageError)
    return error.kind === 'invalid' ? errors.badRequest(error.message) : errors.notFound(error.message);
  if (error instanceof TooManyEndpointsError) return errors.conflict(error.message);
  return error;
}

/** A handler whose ManageError (bad input, no such id) reaches the one error handler as the catalogue's 400 or 404. */
function managed<A extends unknown[], R>(handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (error) {
      throw asHttp(error);
    }
  };
}

const tokenView = (t: TokenRecord) => ({
  id: t.id,
  owner: t.owner,
  scopes: t.scopes,
  createdAt: t.createdAt.toISOString(),
  expiresAt: t.expiresAt?.toISOString() ?? null,
  revokedAt: t.revokedAt?.toISOString() ?? null,
});

/**
 * The admin HTTP API, on the admin listener only: tokens and webhook
 * endpoints managed without access to the database, through the functions
 * the CLI uses. Every route checks the bearer secret first, compared in
 * constant time (SHA-256 of both sides, so their lengths are equal too).
 * /openapi.json describes it.
 */
export async function registerAdminApi(
  app: FastifyInstance,
  { secret, store, settings }: AdminApiOptions,
): Promise<void> {
  const expected = sha256(secret);
  app.setValidatorCompiler(validatorCompiler);
  registerJsonBodyParser(app, BODY_LIMIT);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store admin API',
        version: API_VERSION,
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'Tokens and webhook endpoints, managed over HTTP on the admin listener (--admin-port), with the secret of ' +
          '--admin-token-file as the bearer token.',
      },
      servers: [{ url: '/', description: 'The admin listener that serves this document' }],
      components: { securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } } },
      security: [{ adminToken: [] }],
      tags: [
        { name: 'tokens', description: 'Bearer tokens of the plant API' },
        { name: 'webhooks', description: 'Webhook endpoints' },
      ],
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());

  await app.register(async (api) => {
    api.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
      const header = request.headers.authorization;
      const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
      if (!match) return done(errors.adminUnauthorized(header !== undefined) as AppError);
      if (!timingSafeEqual(sha256(match[1]!), expected)) return done(errors.adminUnauthorized(true) as AppError);
      done();
    });

    api.post<{ Body: NewAdminToken }>(
      '/admin/tokens',
      {
        schema: {
          tags: ['tokens'],
          summary: 'Create a token',
          body: NewAdminToken,
          response: { 201: CreatedAdminToken, ...errorResponses },
        },
      },
      managed(async (request, reply) => {
        const { owner, scopes, expiresIn } = request.body;
        const checked = {
          owner: checkOwner(owner, 'owner'),
          scopes: checkScopes(scopes ?? [...SCOPES], 'scopes'),
          expiresInMs: checkExpiresIn(expiresIn, 'expiresIn'),
        };
        const { token, record } = await issueToken(store.tokens, checked);
        return reply.code(201).send({
          id: record.id,
          token,
          owner: record.owner,
          scopes: record.scopes,
          expiresAt: record.expiresAt?.toISOString() ?? null,
        });
      }),
    );
    api.get<{ Querystring: { owner?: string } }>(
      '/admin/tokens',
      {
        schema: {
          tags: ['tokens'],
          summary: 'List tokens, without secrets',
          querystring: OwnerQuery,
          response: { 200: AdminTokenList, ...errorResponses },
        },
      },
      managed(async (request) => (await listTokens(store.tokens, request.query.owner)).map(tokenView)),
    );
    api.delete<{ Params: { id: string } }>(
      '/admin/tokens/:id',
      {
        schema: {
          tags: ['tokens'],
          summary: 'Revoke a token',
          params: IdParams,
          response: { 204: { type: 'null' }, ...errorResponses },
        },
      },
      managed(async (request, reply) => {
        // By id only: a token itself never travels in a URL.
        if (!request.params.id.startsWith('tok_'))
          throw errors.notFound(`no token has the id ${JSON.stringify(request.params.id)}`);
        await revokeToken(store.tokens, request.params.id);
        return reply.code(204).send();
      }),
    );

    api.post<{ Body: NewAdminWebhook }>(
      '/admin/webhooks',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'Register a webhook endpoint',
          body: NewAdminWebhook,
          response: { 201: CreatedAdminWebhook, ...errorResponses },
        },
      },
      managed(async (request, reply) => {
        const { owner, url, events } = request.body;
        const added = await addWebhook(store, settings, {
          owner: checkOwner(owner, 'owner'),
          url: checkWebhookUrl(url, 'url'),
          events: checkEvents(events ?? [...ADMIN_EVENT_TYPES], 'events'),
        });
        return reply.code(201).send({
          id: added.id,
          owner: added.owner,
          url: added.url,
          events: added.events,
          secret: added.secret,
          warnings: added.warnings,
        });
      }),
    );
    api.get<{ Querystring: { owner?: string } }>(
      '/admin/webhooks',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'List webhook endpoints, without secrets',
          querystring: OwnerQuery,
          response: { 200: AdminWebhookList, ...errorResponses },
        },
      },
      managed(async (request) =>
        (await listWebhooks(store.webhooks, request.query.owner)).map((e) => ({
          id: e.id,
          owner: e.owner,
          url: e.url,
          events: e.events,
          pending: e.pending,
          createdAt: e.createdAt.toISOString(),
          disabledAt: e.disabledAt?.toISOString() ?? null,
          disabledReason: e.disabledReason ?? null,
        })),
      ),
    );
    api.delete<{ Params: { id: string } }>(
      '/admin/webhooks/:id',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'Remove a webhook endpoint and its waiting events',
          params: IdParams,
          response: { 204: { type: 'null' }, ...errorResponses },
        },
      },
      managed(async (request, reply) => {
        await removeWebhook(store.webhooks, request.params.id);
        return reply.code(204).send();
      }),
    );
    api.post<{ Params: { id: string } }>(
      '/admin/webhooks/:id/test',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'Send a signed webhook.test event now',
          params: IdParams,
          response: { 200: AdminWebhookTest, ...errorResponses },
        },
      },
      managed(async (request) => testWebhook(store.webhooks, settings, request.params.id)),
    );
    api.post<{ Params: { id: string } }>(
      '/admin/webhooks/:id/redeliver',
      {
        schema: {
          tags: ['webhooks'],
          summary: 'Queue the failed deliveries of an endpoint again',
          description:
            'Every delivery of the endpoint that was given up after its last failed attempt (and is still kept: ' +
            '--events-retention-ms since) is queued again, due at once, oldest event first, with the same ' +
            "webhook-id; the endpoint's backoff ends. A running server sends them. Answers how many were queued.",
          params: IdParams,
          response: { 200: AdminWebhookRedelivery, ...errorResponses },
        },
      },
      managed(async (request) => redeliverWebhook(store.webhooks, request.params.id)),
    );
  });
}
