import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { INT32_MAX } from '../schemas/plant.js';

export const DURABILITIES = ['full', 'normal'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const PG_POOLERS = ['none', 'transaction'] as const;
/** The OTLP transports of OTEL_EXPORTER_OTLP_PROTOCOL the service speaks (not grpc). */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
/** The samplers of OTEL_TRACES_SAMPLER that the OpenTelemetry SDK builds in. */
export const TRACE_SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;

/** The topics of serve --help and of the configuration reference, in their order. */
export const SETTING_GROUPS = [
  'network',
  'storage',
  'auth',
  'webhooks',
  'events',
  'limits',
  'observability',
  'tracing',
] as const;
export type SettingGroup = (typeof SETTING_GROUPS)[number];

/**
 * What a setting's schema cannot say about its text: `auto-cpus`, that the
 * word auto stands for the number of CPUs; `redis-url`, that the text must be
 * a redis:// or rediss:// URL.
 */
export type TextRule = 'auto-cpus' | 'redis-url';

export interface SettingSpec {
  group: SettingGroup;
  env: string;
  /** An older, unprefixed variable, read only when `env` is unset. */
  fallbackEnv?: string;
  default: string;
  /** A valid value, once read; Config's type and validation are made of these, and so is the reading of the text. */
  schema: TSchema;
  text?: TextRule;
  /** Comma-separated values on the command line; an array of strings in a configuration file. */
  list?: true;
  /** The value's placeholder in --help ('' for a boolean flag). */
  arg: string;
  help: string;
}

// The PostgreSQL pool also arms a client-side timer of this plus 1000 ms
// (db-connect.postgres.ts); Node's setTimeout fires at once for delays past
// INT32_MAX, which would fail every query.
export const MAX_STATEMENT_TIMEOUT_MS = INT32_MAX - 1001;
// Node's timers fire at once for delays past INT32_MAX.
export const MAX_TIMER_MS = INT32_MAX;

export const Rate = Type.Object({
  max: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
  windowMs: Type.Integer({ minimum: 1000 }),
});
/** A limit: at most `max` in each window of `windowMs`. */
export type Rate = Static<typeof Rate>;
