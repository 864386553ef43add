import { Type } from '@sinclair/typebox';
import { type SettingSpec } from '../setting-spec.js';

/** Live event streams (GET /plants/events) and the events kept for them. */
export const EVENTS = {
  'events-retention-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_RETENTION_MS',
    default: '86400000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 1000, maximum: Number.MAX_SAFE_INTEGER }),
    help:
      'how long plant events are kept for resuming live streams (GET /plants/events) with Last-Event-ID, ' +
      'and failed webhook deliveries for webhook redeliver (events a delivery needs are kept until it is done)',
  },
  'events-max-kept': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_KEPT',
    default: '100000',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    help:
      "most plant events kept for resuming per owner: an owner's oldest go first, never another owner's " +
      "(all owners' events also go after --events-retention-ms)",
  },
  'events-poll-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_POLL_MS',
    default: '100',
    arg: 'MS',
    schema: Type.Integer({ minimum: 10, maximum: 60_000 }),
    help: 'how often live streams look for events written by other processes or instances',
  },
  'events-keepalive-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_KEEPALIVE_MS',
    default: '15000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 10, maximum: 15_000 }),
    help: 'an idle live stream gets a comment line this often (at most 15 s), so proxies keep it open',
  },
  'events-max-streams': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_STREAMS',
    default: '1000',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    help: 'live event streams open at once per process; beyond it 429',
  },
  'events-max-streams-per-owner': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_STREAMS_PER_OWNER',
    default: '10',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    help: 'live event streams open at once per token owner and process; beyond it 429',
  },
  'events-buffer-bytes': {
    group: 'events',
    env: 'PLANTS_EVENTS_BUFFER_BYTES',
    default: '262144',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 1024, maximum: 1024 ** 3 }),
    help: 'unsent bytes a live stream may hold for a slow client before it is closed',
  },
  'events-slow-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_SLOW_MS',
    default: '10000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: 600_000 }),
    help:
      'a live stream whose client takes none of what waits for it for this long is closed as slow, ' +
      'whether it is catching up on a backlog or following live events',
  },
} as const satisfies Record<string, SettingSpec>;
