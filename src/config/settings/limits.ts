import { Type } from '@sinclair/typebox';
import { INT32_MAX } from '../../schemas/plant.js';
import { Rate, type SettingSpec } from '../setting-spec.js';

/** Limits on requests, bodies, pages, connections and rates. */
export const LIMITS = {
  'body-limit': {
    group: 'limits',
    env: 'PLANTS_BODY_LIMIT',
    default: '1048576',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 64, maximum: 1024 ** 3 }),
    help: 'largest request body',
  },
  'list-default-limit': {
    group: 'limits',
    env: 'PLANTS_LIST_DEFAULT_LIMIT',
    default: '1000',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
    help: 'page size of GET /plants without ?limit',
  },
  'list-max-limit': {
    group: 'limits',
    env: 'PLANTS_LIST_MAX_LIMIT',
    default: '1000',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
    help: 'largest page size; a larger ?limit is clamped to it',
  },
  'max-connections': {
    group: 'limits',
    env: 'PLANTS_MAX_CONNECTIONS',
    default: '10000',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 10_000_000 }),
    help: 'open connections per process; beyond it new connections are closed at once (0: no cap)',
  },
  'rate-limit': {
    group: 'limits',
    env: 'PLANTS_RATE_LIMIT',
    default: 'off',
    arg: 'N/1s|N/1m|N/1h',
    schema: Type.Union([Rate, Type.Null()]),
    help: 'requests per token owner; off: no limit',
  },
  'auth-fail-limit': {
    group: 'limits',
    env: 'PLANTS_AUTH_FAIL_LIMIT',
    default: '20/1m',
    arg: 'N/1s|N/1m|N/1h',
    schema: Type.Union([Rate, Type.Null()]),
    help: 'failed authentications per client address; applies when --rate-limit is on, or when set; off: no limit',
  },
  redis: {
    group: 'limits',
    env: 'PLANTS_REDIS_URL',
    default: 'off',
    text: 'redis-url',
    arg: 'URL',
    schema: Type.Union([Type.String(), Type.Null()]),
    help: 'redis:// or rediss:// URL where every process keeps its rate-limit counters (needs a limit on); off: each process counts alone',
  },
  'redis-url-file': {
    group: 'limits',
    env: 'PLANTS_REDIS_URL_FILE',
    default: '',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the --redis URL, so that its password stays out of the process list (instead of --redis)',
  },
  'redis-key-prefix': {
    group: 'limits',
    env: 'PLANTS_REDIS_KEY_PREFIX',
    default: 'plant-store:',
    arg: 'PREFIX',
    schema: Type.String({ maxLength: 200 }),
    help: 'prefix of the rate-limit counter keys in Redis',
  },
} as const satisfies Record<string, SettingSpec>;
