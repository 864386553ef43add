import { Type } from '@sinclair/typebox';
import { INT32_MAX } from '../../schemas/plant.js';
import { LOG_LEVELS, type SettingSpec } from '../setting-spec.js';

/** Logs, request ids and the admin listener. */
export const OBSERVABILITY = {
  'log-level': {
    group: 'observability',
    env: 'PLANTS_LOG_LEVEL',
    default: 'info',
    arg: 'LEVEL',
    schema: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))),
    help: 'fatal, error, warn, info, debug, trace or silent (any case)',
  },
  'trust-request-id': {
    group: 'observability',
    env: 'PLANTS_TRUST_REQUEST_ID',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help:
      "keep a request's own X-Request-Id (up to 128 safe characters that do not look like a secret) in logs and the " +
      'answer; only behind a proxy that sets it, since anyone else can put anything there',
  },
  'access-log': {
    group: 'observability',
    env: 'PLANTS_ACCESS_LOG',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help: 'log a line per request at info (request id, method, URL, status, time, owner)',
  },
  'slow-request-ms': {
    group: 'observability',
    env: 'PLANTS_SLOW_REQUEST_MS',
    default: '1000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 0, maximum: INT32_MAX }),
    help: 'log requests that take at least this long at warn; 0 turns it off',
  },
  'admin-port': {
    group: 'observability',
    env: 'PLANTS_ADMIN_PORT',
    default: 'off',
    arg: 'PORT|off',
    schema: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()]),
    help: 'port of the admin listener on --host, serving /metrics, /healthz and /readyz (0 picks a free one); off: none',
  },
  'admin-token-file': {
    group: 'observability',
    env: 'PLANTS_ADMIN_TOKEN_FILE',
    default: '',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the secret (at least 32 bytes) that the admin HTTP API (/admin/tokens, /admin/webhooks on --admin-port) takes as its bearer token; unset: no admin API',
  },
} as const satisfies Record<string, SettingSpec>;
