import { Type } from '@sinclair/typebox';
import { MAX_TIMER_MS, type SettingSpec } from '../setting-spec.js';

/** Webhook delivery. */
export const WEBHOOKS = {
  'webhooks-allow-private': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOKS_ALLOW_PRIVATE',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help: 'deliver webhooks to loopback, private and link-local addresses too (tests, internal networks)',
  },
  'webhook-key-file': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_KEY_FILE',
    default: '',
    arg: 'PATH',
    /** Unset (or empty): the default place, see webhookKeyPath. */
    schema: Type.Optional(Type.String()),
    help: 'file with the key that encrypts webhook secrets; unset: <db>.webhook-key next to the SQLite file, or ./data/webhook.key with PostgreSQL',
  },
  'webhook-timeout-ms': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_TIMEOUT_MS',
    default: '10000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: 120_000 }),
    help: 'time limit of one webhook delivery attempt',
  },
  'webhook-lease-ms': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_LEASE_MS',
    default: '',
    arg: 'MS',
    /** Unset: the delivery loop's own, see DeliveryLoop. */
    schema: Type.Optional(Type.Integer({ minimum: 1100, maximum: MAX_TIMER_MS })),
    help:
      'how long a process holds the webhook events it takes for delivery; those of a process that died go out from ' +
      'another once this has passed; at least --webhook-timeout-ms + 1000; unset: 4 × (--webhook-timeout-ms + 500) + 5000',
  },
  'webhooks-max-endpoints': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOKS_MAX_ENDPOINTS',
    default: '20',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 10_000 }),
    help: 'most webhook endpoints one owner may have (webhook add refuses more)',
  },
  'webhooks-max-pending': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOKS_MAX_PENDING',
    default: '10000',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 100_000_000 }),
    help: 'most events waiting for one webhook endpoint; past it the endpoint is disabled (webhook list says why)',
  },
} as const satisfies Record<string, SettingSpec>;
