import rateLimit, {
  normalizeIP,
  type FastifyRateLimitStore,
  type FastifyRateLimitStoreCtor,
} from '@fastify/rate-limit';
import { LRUCache } from 'lru-cache';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { takesToken } from '../auth/bearer.js';
import type { Principal } from '../auth/principal.js';
import type {} from '../http/client-address.js';
import type { Config, Rate } from '../config.js';
import { AppError, errors } from '../http/errors.js';
import { rateLimitRejections } from '../metrics/metrics.js';
import { errorResponses } from '../schemas/responses.js';
import { LocalCounters, RedisCounters, type RateCounters } from './rate-counter.js';

const WINDOW_NAMES: Record<number, string> = { 1000: 'second', 60_000: 'minute', 3_600_000: 'hour' };
const windowName = (rate: Rate) => WINDOW_NAMES[rate.windowMs] ?? `${rate.windowMs / 1000} s`;

/** The plugin builds its store from a class: this one hands over a store made beforehand. */
function storeClass(store: FastifyRateLimitStore): FastifyRateLimitStoreCtor {
  return function given() {
    return store;
  } as unknown as FastifyRateLimitStoreCtor;
}

const principalOf = (request: FastifyRequest) => request.principal as Principal | null;

/**
 * Per token owner: every authenticated request counts, in the route's
 * onRequest hooks right after the bearer check (which is what tells the
 * owner) and before the body is read. Unauthenticated routes are not limited.
 */
async function limitOwners(app: FastifyInstance, store: FastifyRateLimitStore, rate: Rate): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: rate.max,
    timeWindow: rate.windowMs,
    store: storeClass(store),
    // Fail open: when the counter cannot answer, the request is served.
    skipOnError: true,
    // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset (and Retry-After on a 429).
    enableDraftSpec: true,
    keyGenerator: (request) => `owner:${principalOf(request)?.owner ?? ''}`,
    allowList: (request) => principalOf(request) === null,
    onExceeded: () => rateLimitRejections.inc({ limit: 'owner' }),
    errorResponseBuilder: (_request, context) =>
      errors.tooManyRequests(
        `rate limit exceeded: each token owner may make ${rate.max} requests per ${windowName(rate)}; retry in ${Math.ceil(context.ttl / 1000)} s`,
      ),
  });
}

/**
 * Per client address, failed authentications only (an invalid, unknown,
 * expired or revoked token): past the limit, every request from that address
 * is refused with 429 before its token is looked at, until the window ends.
 * The count is shared through the counter; the refusal is decided by each
 * process from its own last count, so with several processes an address gets
 * at most one extra failure per process before all of them refuse it.
 */
function limitAuthFailures(app: FastifyInstance, store: FastifyRateLimitStore, rate: Rate, maxBlocked = 100_000): void {
  const blockedUntil = new LRUCache<string, number>({ max: maxBlocked });
  // The client behind a trusted proxy (--trust-proxy), an IPv6 client by its /64.
  const clientOf = (request: FastifyRequest) => normalizeIP(request.client);

  const refuseBlocked: onRequestHookHandler = (request, _reply, done) => {
    if (blockedUntil.size === 0) return done();
    const client = clientOf(request);
    const until = blockedUntil.get(client);
    if (until === undefined) return done();
    const now = Date.now();
    if (until <= now) return done();
    rateLimitRejections.inc({ limit: 'auth_failures' });
    const seconds = String(Math.ceil((until - now) / 1000));
    done(
      errors.tooManyRequests(
        `too many failed authentications from this address (at most ${rate.max} per ${windowName(rate)}); retry in ${seconds} s`,
        {
          'retry-after': seconds,
          'ratelimit-limit': String(rate.max),
          'ratelimit-remaining': '0',
          'ratelimit-reset': seconds,
        },
      ),
    );
  };
  // Only on the routes that take a token: health checks from the same address keep working.
  app.addHook('onRoute', (route) => {
    if (takesToken(route))
      route.onRequest = [refuseBlocked, ...(route.onRequest === undefined ? [] : [route.onRequest].flat())];
  });

  app.addHook('onError', (request, _reply, error, done) => {
    if (error instanceof AppError && error.code === 'INVALID_TOKEN') {
      const client = clientOf(request);
      store.incr(
        `auth-failures:${client}`,
        (error, count) => {
          // Fail open on an error; the counters have logged the outage.
          if (error || count === undefined || count.current < rate.max) return;
          blockedUntil.set(client, Date.now() + count.ttl, { ttl: count.ttl });
        },
        rate.windowMs,
        rate.max,
      );
    }
    done();
  });
}

/** Declares the 429 answer on the routes that need a token, so the OpenAPI document shows it. */
function document429(app: FastifyInstance): void {
  const tooMany = errorResponses(429);
  app.addHook('onRoute', (route) => {
    if (!takesToken(route) || route.schema === undefined) return;
    route.schema = { ...route.schema, response: { ...(route.schema.response as object), ...tooMany } };
  });
}

/**
 * Rate limits, when configured: --rate-limit per token owner and
 * --auth-fail-limit per client address, counted in Redis with --redis (shared
 * by every process using it) or else in this process alone. Call before any
 * route is declared. Nothing is registered when both limits are off.
 * `maxKeys` bounds the keys each limit keeps in memory.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  config: Pick<Config, 'rateLimit' | 'authFailLimit' | 'redis' | 'redisKeyPrefix'>,
  { maxKeys = 100_000 }: { maxKeys?: number } = {},
): Promise<void> {
  if (config.rateLimit === null && config.authFailLimit === null) return;
  let counters: RateCounters;
  if (config.redis === null) counters = new LocalCounters(maxKeys);
  else counters = await RedisCounters.open(config.redis, config.redisKeyPrefix, app.log);
  app.addHook('onClose', () => counters.close());
  document429(app);
  if (config.rateLimit !== null) await limitOwners(app, counters.store(), config.rateLimit);
  if (config.authFailLimit !== null) limitAuthFailures(app, counters.store(), config.authFailLimit, maxKeys);
}
