import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import ipaddr from 'ipaddr.js';
import { parse as parseToml } from 'smol-toml';
import { INT32_MAX } from './schemas/plant.js';
import { SSL_MODES, postgresSslMode, withoutPassword } from './db-url.js';

export const DURABILITIES = ['full', 'normal'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const PG_POOLERS = ['none', 'transaction'] as const;

/** The topics of serve --help and of the configuration reference, in their order. */
export const SETTING_GROUPS = ['network', 'storage', 'auth', 'webhooks', 'events', 'limits', 'observability'] as const;
export type SettingGroup = (typeof SETTING_GROUPS)[number];

/** How a setting's text (flag, variable, file) becomes its value. */
export type SettingKind = 'string' | 'int' | 'bool' | 'workers' | 'enum' | 'port-or-off' | 'rate' | 'redis-url';

export interface SettingSpec {
  group: SettingGroup;
  env: string;
  /** An older, unprefixed variable, read only when `env` is unset. */
  fallbackEnv?: string;
  default: string;
  kind: SettingKind;
  values?: readonly string[];
  /** Comma-separated values on the command line; an array of strings in a configuration file. */
  list?: true;
  /** The value's placeholder in --help ('' for a boolean flag). */
  arg: string;
  /** A valid value, once read; Config's type and validation are made of these. */
  schema: TSchema;
  help: string;
}

// The PostgreSQL pool also arms a client-side timer of this plus 1000 ms
// (db-connect.postgres.ts); Node's setTimeout fires at once for delays past
// INT32_MAX, which would fail every query.
const MAX_STATEMENT_TIMEOUT_MS = INT32_MAX - 1001;
// Node's timers fire at once for delays past INT32_MAX.
const MAX_TIMER_MS = INT32_MAX;

const Rate = Type.Object({
  max: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
  windowMs: Type.Integer({ minimum: 1000 }),
});
/** A limit: at most `max` in each window of `windowMs`. */
export type Rate = Static<typeof Rate>;

// Every setting, once: its flag (the key), its environment variable, its
// default, how to read it, what a valid value is (schema), the topic it is
// listed under in --help and the placeholder of its value there. The help
// text, the configuration file and docs/reference/configuration.md
// (npm run docs:config) are all written from this table.
//
// An entry: { group, env, default, kind, arg, schema, help }, plus
// `fallbackEnv` (an older variable read when `env` is unset) and `list`
// (comma-separated values; an array in a configuration file).
export const SETTINGS = {
  host: {
    group: 'network',
    env: 'PLANTS_HOST',
    default: '127.0.0.1',
    kind: 'string',
    arg: 'ADDRESS',
    schema: Type.String({ minLength: 1 }),
    help: 'address to listen on (0.0.0.0: every interface)',
  },
  port: {
    group: 'network',
    env: 'PLANTS_PORT',
    fallbackEnv: 'PORT',
    default: '8080',
    kind: 'int',
    arg: 'PORT',
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    help: 'TCP port to listen on (0 picks a free one)',
  },
  workers: {
    group: 'network',
    env: 'PLANTS_WORKERS',
    default: '1',
    kind: 'workers',
    arg: 'N|auto',
    schema: Type.Integer({ minimum: 1, maximum: 256 }),
    help: 'worker processes sharing the port; auto: one per CPU',
  },
  'headers-timeout-ms': {
    group: 'network',
    env: 'PLANTS_HEADERS_TIMEOUT_MS',
    default: '10000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
    help: 'a new connection must send its whole request head within this time, or it is closed',
  },
  'request-timeout-ms': {
    group: 'network',
    env: 'PLANTS_REQUEST_TIMEOUT_MS',
    default: '30000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
    help: 'a request not received, handled and answered within this time is cut',
  },
  'keep-alive-timeout-ms': {
    group: 'network',
    env: 'PLANTS_KEEP_ALIVE_TIMEOUT_MS',
    default: '5000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS }),
    help: 'how long an idle keep-alive connection stays open after its last answer',
  },
  'cors-origin': {
    group: 'network',
    env: 'PLANTS_CORS_ORIGIN',
    default: 'off',
    kind: 'string',
    list: true,
    arg: 'ORIGIN[,ORIGIN...]',
    /** "off", "*", or origins separated by commas (checked by loadConfig). */
    schema: Type.String({ minLength: 1 }),
    help: 'origins whose browser pages may call the API, such as https://app.example.com; *: any; off: none',
  },
  db: {
    group: 'storage',
    env: 'PLANTS_DB',
    fallbackEnv: 'DATABASE_URL',
    default: './data/plants.db',
    kind: 'string',
    arg: 'PATH|URL',
    schema: Type.String({ minLength: 1 }),
    help: 'SQLite file path, or a postgres:// or postgresql:// URL',
  },
  'db-file': {
    group: 'storage',
    env: 'PLANTS_DB_FILE',
    default: '',
    kind: 'string',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the --db value, so that a PostgreSQL password stays out of the process list (instead of --db)',
  },
  durability: {
    group: 'storage',
    env: 'PLANTS_DURABILITY',
    default: 'full',
    kind: 'enum',
    values: DURABILITIES,
    arg: 'full|normal',
    schema: Type.Union(DURABILITIES.map((d) => Type.Literal(d))),
    help: 'full: a 2xx write survives power loss; normal: it survives a crash of the process',
  },
  'list-cache-bytes': {
    group: 'storage',
    env: 'PLANTS_LIST_CACHE_BYTES',
    default: '16777216',
    kind: 'int',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 0, maximum: 2 ** 40 }),
    help: 'memory for reusing unchanged list pages (SQLite only); 0 turns it off',
  },
  'pg-pool-size': {
    group: 'storage',
    env: 'PLANTS_PG_POOL_SIZE',
    default: '10',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    help: 'PostgreSQL connections per process',
  },
  'pg-statement-timeout-ms': {
    group: 'storage',
    env: 'PLANTS_PG_STATEMENT_TIMEOUT_MS',
    default: '5000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 0, maximum: MAX_STATEMENT_TIMEOUT_MS }),
    help: 'PostgreSQL statement timeout; 0 turns it off',
  },
  'pg-pooler': {
    group: 'storage',
    env: 'PLANTS_PG_POOLER',
    default: 'none',
    kind: 'enum',
    values: PG_POOLERS,
    arg: 'none|transaction',
    schema: Type.Union(PG_POOLERS.map((p) => Type.Literal(p))),
    help: 'transaction: PostgreSQL is behind a transaction-pooling PgBouncer (no named prepared statements, no startup parameters)',
  },
  'jwks-url': {
    group: 'auth',
    env: 'PLANTS_JWKS_URL',
    default: '',
    kind: 'string',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'accept JWT access tokens signed by the keys of this JWKS URL (needs --jwt-issuer and --jwt-audience)',
  },
  'oidc-issuer': {
    group: 'auth',
    env: 'PLANTS_OIDC_ISSUER',
    default: '',
    kind: 'string',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'accept JWT access tokens of this OpenID Connect issuer; its JWKS URL is discovered (instead of --jwks-url)',
  },
  'jwt-issuer': {
    group: 'auth',
    env: 'PLANTS_JWT_ISSUER',
    default: '',
    kind: 'string',
    arg: 'ISSUER',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the iss claim a JWT must carry (required with JWTs)',
  },
  'jwt-audience': {
    group: 'auth',
    env: 'PLANTS_JWT_AUDIENCE',
    default: '',
    kind: 'string',
    arg: 'AUDIENCE',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the aud claim a JWT must carry (required with JWTs)',
  },
  'jwt-owner-claim': {
    group: 'auth',
    env: 'PLANTS_JWT_OWNER_CLAIM',
    default: 'sub',
    kind: 'string',
    arg: 'CLAIM',
    schema: Type.String({ minLength: 1, maxLength: 256 }),
    help: 'the JWT claim that names the owner',
  },
  'jwt-allow-http': {
    group: 'auth',
    env: 'PLANTS_JWT_ALLOW_HTTP',
    default: 'false',
    kind: 'bool',
    arg: '',
    schema: Type.Boolean(),
    help:
      "accept an http:// --jwks-url, --oidc-issuer or jwks_uri of the issuer's discovery document on a host other than " +
      'loopback (keys travel unprotected)',
  },
  'webhooks-allow-private': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOKS_ALLOW_PRIVATE',
    default: 'false',
    kind: 'bool',
    arg: '',
    schema: Type.Boolean(),
    help: 'deliver webhooks to loopback, private and link-local addresses too (tests, internal networks)',
  },
  'webhook-key-file': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_KEY_FILE',
    default: '',
    kind: 'string',
    arg: 'PATH',
    /** Unset (or empty): the default place, see webhookKeyPath. */
    schema: Type.Optional(Type.String()),
    help: 'file with the key that encrypts webhook secrets; unset: <db>.webhook-key next to the SQLite file, or ./data/webhook.key with PostgreSQL',
  },
  'webhook-timeout-ms': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_TIMEOUT_MS',
    default: '10000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: 120_000 }),
    help: 'time limit of one webhook delivery attempt',
  },
  'webhook-lease-ms': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOK_LEASE_MS',
    default: '',
    kind: 'int',
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
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 10_000 }),
    help: 'most webhook endpoints one owner may have (webhook add refuses more)',
  },
  'webhooks-max-pending': {
    group: 'webhooks',
    env: 'PLANTS_WEBHOOKS_MAX_PENDING',
    default: '10000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 100_000_000 }),
    help: 'most events waiting for one webhook endpoint; past it the endpoint is disabled (webhook list says why)',
  },
  'events-retention-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_RETENTION_MS',
    default: '86400000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 1000, maximum: Number.MAX_SAFE_INTEGER }),
    help: 'how long plant events are kept for resuming live streams (GET /plants/events) with Last-Event-ID',
  },
  'events-max-kept': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_KEPT',
    default: '1000000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    help: 'most plant events kept for resuming, over all owners; older ones are pruned first',
  },
  'events-poll-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_POLL_MS',
    default: '100',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 10, maximum: 60_000 }),
    help: 'how often live streams look for events written by other processes or instances',
  },
  'events-keepalive-ms': {
    group: 'events',
    env: 'PLANTS_EVENTS_KEEPALIVE_MS',
    default: '15000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 10, maximum: 15_000 }),
    help: 'an idle live stream gets a comment line this often (at most 15 s), so proxies keep it open',
  },
  'events-max-streams': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_STREAMS',
    default: '1000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    help: 'live event streams open at once per process; beyond it 429',
  },
  'events-max-streams-per-owner': {
    group: 'events',
    env: 'PLANTS_EVENTS_MAX_STREAMS_PER_OWNER',
    default: '10',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    help: 'live event streams open at once per token owner and process; beyond it 429',
  },
  'events-buffer-bytes': {
    group: 'events',
    env: 'PLANTS_EVENTS_BUFFER_BYTES',
    default: '262144',
    kind: 'int',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 1024, maximum: 1024 ** 3 }),
    help: 'unsent bytes a live stream may hold for a slow client before it is closed',
  },
  'body-limit': {
    group: 'limits',
    env: 'PLANTS_BODY_LIMIT',
    default: '1048576',
    kind: 'int',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 64, maximum: 1024 ** 3 }),
    help: 'largest request body',
  },
  'list-default-limit': {
    group: 'limits',
    env: 'PLANTS_LIST_DEFAULT_LIMIT',
    default: '1000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
    help: 'page size of GET /plants without ?limit',
  },
  'list-max-limit': {
    group: 'limits',
    env: 'PLANTS_LIST_MAX_LIMIT',
    default: '1000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
    help: 'largest page size; a larger ?limit is clamped to it',
  },
  'max-connections': {
    group: 'limits',
    env: 'PLANTS_MAX_CONNECTIONS',
    default: '10000',
    kind: 'int',
    arg: 'N',
    schema: Type.Integer({ minimum: 0, maximum: 10_000_000 }),
    help: 'open connections per process; beyond it new connections are closed at once (0: no cap)',
  },
  'rate-limit': {
    group: 'limits',
    env: 'PLANTS_RATE_LIMIT',
    default: 'off',
    kind: 'rate',
    arg: 'N/1s|N/1m|N/1h',
    schema: Type.Union([Rate, Type.Null()]),
    help: 'requests per token owner; off: no limit',
  },
  'auth-fail-limit': {
    group: 'limits',
    env: 'PLANTS_AUTH_FAIL_LIMIT',
    default: '20/1m',
    kind: 'rate',
    arg: 'N/1s|N/1m|N/1h',
    schema: Type.Union([Rate, Type.Null()]),
    help: 'failed authentications per client address; applies when --rate-limit is on, or when set; off: no limit',
  },
  redis: {
    group: 'limits',
    env: 'PLANTS_REDIS_URL',
    default: 'off',
    kind: 'redis-url',
    arg: 'URL',
    schema: Type.Union([Type.String(), Type.Null()]),
    help: 'redis:// or rediss:// URL where every process keeps its rate-limit counters (needs a limit on); off: each process counts alone',
  },
  'redis-url-file': {
    group: 'limits',
    env: 'PLANTS_REDIS_URL_FILE',
    default: '',
    kind: 'string',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the --redis URL, so that its password stays out of the process list (instead of --redis)',
  },
  'redis-key-prefix': {
    group: 'limits',
    env: 'PLANTS_REDIS_KEY_PREFIX',
    default: 'plant-store:',
    kind: 'string',
    arg: 'PREFIX',
    schema: Type.String({ maxLength: 200 }),
    help: 'prefix of the rate-limit counter keys in Redis',
  },
  'log-level': {
    group: 'observability',
    env: 'PLANTS_LOG_LEVEL',
    default: 'info',
    kind: 'enum',
    values: LOG_LEVELS,
    arg: 'LEVEL',
    schema: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))),
    help: 'fatal, error, warn, info, debug, trace or silent (any case)',
  },
  'trust-request-id': {
    group: 'observability',
    env: 'PLANTS_TRUST_REQUEST_ID',
    default: 'false',
    kind: 'bool',
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
    kind: 'bool',
    arg: '',
    schema: Type.Boolean(),
    help: 'log a line per request at info (request id, method, URL, status, time, owner)',
  },
  'slow-request-ms': {
    group: 'observability',
    env: 'PLANTS_SLOW_REQUEST_MS',
    default: '1000',
    kind: 'int',
    arg: 'MS',
    schema: Type.Integer({ minimum: 0, maximum: INT32_MAX }),
    help: 'log requests that take at least this long at warn; 0 turns it off',
  },
  'admin-port': {
    group: 'observability',
    env: 'PLANTS_ADMIN_PORT',
    default: 'off',
    kind: 'port-or-off',
    arg: 'PORT|off',
    schema: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()]),
    help: 'port of the admin listener on --host, serving /metrics, /healthz and /readyz (0 picks a free one); off: none',
  },
  'admin-token-file': {
    group: 'observability',
    env: 'PLANTS_ADMIN_TOKEN_FILE',
    default: '',
    kind: 'string',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the secret (at least 32 bytes) that the admin HTTP API (/admin/tokens, /admin/webhooks on --admin-port) takes as its bearer token; unset: no admin API',
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

const WINDOWS: Record<string, number> = { '1s': 1000, '1m': 60_000, '1h': 3_600_000 };

const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type SettingSchemas = { -readonly [K in SettingName as Camel<K>]: (typeof SETTINGS)[K]['schema'] };

export const ALL_SETTINGS = Object.keys(SETTINGS) as readonly SettingName[];

// The settings whose value a file may hold instead (key: the file's setting).
const FILE_OF: Partial<Record<SettingName, SettingName>> = { 'db-file': 'db', 'redis-url-file': 'redis' };

/**
 * `names`, each followed by the setting of the file that may hold its value
 * (db by db-file): whatever takes --db takes --db-file too, on the command
 * line, in the environment and in a configuration file.
 */
export function withValueFiles(names: readonly SettingName[]): SettingName[] {
  const out = new Set<SettingName>();
  for (const name of names) {
    out.add(name);
    for (const [fileSetting, holds] of Object.entries(FILE_OF)) if (holds === name) out.add(fileSetting as SettingName);
  }
  return [...out];
}

/** A setting's entry, seen through the common shape (fallbackEnv, values and list are optional). */
export const settingSpec = (name: SettingName): SettingSpec => SETTINGS[name];

const ConfigSchema = Type.Object({
  ...(Object.fromEntries(ALL_SETTINGS.map((name) => [camel(name), SETTINGS[name].schema])) as SettingSchemas),
  // Not settings of their own: set by the CLI (a terminal) and by tests.
  /** The flags whose value carries a password on the command line (warned about at start). */
  passwordsInArgv: Type.Optional(Type.Array(Type.String())),
  /** The admin API's bearer secret, read from --admin-token-file. */
  adminToken: Type.Optional(Type.String()),
  logPretty: Type.Boolean(),
  tokenCacheMs: Type.Integer({ minimum: 0, maximum: 900 }),
  /** Least time between two JWKS fetches caused by tokens whose key is unknown. */
  jwksCooldownMs: Type.Integer({ minimum: 0, maximum: 30_000 }),
  /** The first wait after a failed JWKS fetch (then doubling): shorter in tests of an issuer that comes back. */
  jwksRetryMs: Type.Integer({ minimum: 1, maximum: 30_000 }),
});
export type Config = Static<typeof ConfigSchema>;

/** full: a 2xx write survives power loss; normal: it survives a crash of the process. */
export type Durability = Config['durability'];

/** What sits between Plant Store and PostgreSQL: nothing (or a session pooler), or a transaction pooler. */
export type PgPooler = Config['pgPooler'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Where a setting's value came from: an error names the flag, the environment
 * variable or the configuration file it was read from.
 */
type Source = 'flag' | 'env' | 'fallback-env' | 'file' | 'default';

/** A configuration file (--config FILE), parsed: setting names (as the flags, without --) to values. */
export interface ConfigFile {
  path: string;
  values: Readonly<Record<string, unknown>>;
}

function sourceLabel(name: SettingName, source: Source, file?: ConfigFile): string {
  if (source === 'env') return SETTINGS[name].env;
  if (source === 'fallback-env') return settingSpec(name).fallbackEnv!;
  if (source === 'file') return `${name} in ${file?.path ?? 'the configuration file'}`;
  return `--${name}`;
}

/** What a valid value of a schema is, in words ("a whole number from 0 to 65535"). */
function expectation(schema: TSchema): string {
  const s = schema as {
    type?: string;
    anyOf?: TSchema[];
    const?: unknown;
    minimum?: number;
    maximum?: number;
    minLength?: number;
    maxLength?: number;
  };
  if (s.anyOf) {
    const nullable = s.anyOf.some((m) => (m as { type?: string }).type === 'null');
    const rest = s.anyOf.filter((m) => (m as { type?: string }).type !== 'null').map(expectation);
    return `${rest.join(' or ')}${nullable ? ', or off' : ''}`;
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.type === 'integer') return `a whole number from ${s.minimum ?? 0} to ${s.maximum ?? Number.MAX_SAFE_INTEGER}`;
  if (s.type === 'object') return 'N/1s, N/1m or N/1h';
  if (s.type === 'boolean') return 'true or false';
  if (s.type === 'string' && s.maxLength !== undefined) return `at most ${s.maxLength} characters`;
  if (s.type === 'string') return 'not empty';
  return 'valid';
}

// The Redis client reads the URL only when rate limits start; one it cannot
// parse (redis://[x) would stop the start-up there, with a bare "Invalid URL".
const isRedisUrl = (text: string) => /^rediss?:\/\/./i.test(text) && URL.canParse(text);

function readValue(name: SettingName, raw: string, label: string): string | number | boolean | Rate | null {
  const setting = settingSpec(name);
  if (setting.kind === 'string') return raw;
  if (setting.kind === 'enum') {
    const value = raw.toLowerCase();
    if (!setting.values!.includes(value))
      throw new ConfigError(`${label} must be one of ${setting.values!.join(', ')}, got "${raw}"`);
    return value;
  }
  if (setting.kind === 'bool') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${label} must be true or false, got "${raw}"`);
  }
  if (setting.kind === 'workers' && raw === 'auto') return availableParallelism();
  if (setting.kind === 'port-or-off' && raw === 'off') return null;
  if (setting.kind === 'redis-url') {
    if (raw === 'off') return null;
    if (!isRedisUrl(raw)) throw new ConfigError(`${label} must be a redis:// or rediss:// URL, or off`);
    return raw;
  }
  if (setting.kind === 'rate') {
    if (raw === 'off') return null;
    const m = /^(\d{1,10})\/(1s|1m|1h)$/.exec(raw);
    if (!m || Number(m[1]) < 1)
      throw new ConfigError(`${label} must be N/1s, N/1m or N/1h with N >= 1, or off; got "${raw}"`);
    return { max: Number(m[1]), windowMs: WINDOWS[m[2]!]! };
  }
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${label} must be a whole number, got "${raw}"`);
  return Number(raw);
}

/** A value from a configuration file as the text a flag would carry. */
function fileText(name: SettingName, value: unknown, label: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (Array.isArray(value) && settingSpec(name).list && value.every((v) => typeof v === 'string'))
    return value.join(',');
  const want = settingSpec(name).list ? 'a string or an array of strings' : 'a string, a number or a boolean';
  throw new ConfigError(`${label} must be ${want}, got ${JSON.stringify(value) ?? String(value)}`);
}

/** The closest of `candidates` to `word` by edit distance, when it is close enough to be a likely typo. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(word, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** Levenshtein distance: the fewest one-character edits that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/**
 * Reads a configuration file: JSON (.json) or TOML (.toml), one top-level key
 * per setting, named as its flag without the dashes in front. Keys that name
 * no setting are refused, with the nearest name when there is one.
 */
export function parseConfigFile(path: string, text: string): ConfigFile {
  let values: unknown;
  try {
    if (/\.json$/i.test(path)) values = JSON.parse(text);
    else if (/\.toml$/i.test(path)) values = parseToml(text);
    else throw new ConfigError(`${path}: a configuration file must end in .json or .toml`);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(
      `${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'TOML'}: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new ConfigError(`${path} must hold an object of settings, such as { "port": 8080 }`);
  for (const key of Object.keys(values)) {
    if (!(key in SETTINGS)) {
      const guess = nearest(key.replace(/^--/, ''), ALL_SETTINGS);
      throw new ConfigError(`${path}: unknown setting "${key}"${guess ? ` (did you mean "${guess}"?)` : ''}`);
    }
  }
  return { path, values: values as Record<string, unknown> };
}

/**
 * The one place settings are read. A setting's value comes from, first to
 * last: its flag, its PLANTS_ environment variable, its older variable
 * (DATABASE_URL, PORT), the configuration file, its default. The result is
 * validated and frozen.
 *
 * Only the settings in `only` are read from `flags`, `env` and `file` and
 * validated; the others take their defaults, so a command is not refused for
 * an environment variable it never uses (PORT=abc does not break `token
 * list`). An error names the flag, the variable or the file the bad value
 * came from.
 */
export function loadConfig(
  flags: Partial<Record<SettingName, string>>,
  env: Readonly<Record<string, string | undefined>>,
  extra: Partial<Pick<Config, 'logPretty' | 'tokenCacheMs' | 'jwksCooldownMs' | 'jwksRetryMs'>> = {},
  only: readonly SettingName[] = ALL_SETTINGS,
  file?: ConfigFile,
): Readonly<Config> {
  const out: Record<string, unknown> = {
    logPretty: false,
    tokenCacheMs: 500,
    jwksCooldownMs: 10_000,
    jwksRetryMs: 1000,
    ...extra,
  };
  const sources = new Map<SettingName, Source>();
  const reads = new Set(withValueFiles(only));
  for (const name of ALL_SETTINGS) {
    const spec = settingSpec(name);
    const read = reads.has(name);
    const fallback = spec.fallbackEnv === undefined ? undefined : env[spec.fallbackEnv];
    const candidates: [Source, unknown][] = read
      ? [
          ['flag', flags[name]],
          ['env', env[spec.env]],
          ['fallback-env', fallback],
          ['file', file?.values[name]],
        ]
      : [];
    const [source, value] = candidates.find(([, v]) => v !== undefined) ?? ['default', spec.default];
    sources.set(name, source);
    const label = sourceLabel(name, source, file);
    const raw = source === 'file' ? fileText(name, value, label) : (value as string);
    // A setting without a default is unset when empty (PLANTS_JWKS_URL= in a compose file).
    if (raw === '' && spec.default === '') continue;
    out[camel(name)] = readValue(name, raw, label);
  }
  const label = (key: string): string => {
    const name = kebab(key) as SettingName;
    const source = sources.get(name);
    return source ? sourceLabel(name, source, file) : `--${name}`;
  };
  if (!Value.Check(ConfigSchema, out)) {
    const err = Value.Errors(ConfigSchema, out).First();
    const key = err?.path.split('/')[1] ?? '';
    const name = kebab(key) as SettingName;
    const schema = name in SETTINGS ? SETTINGS[name].schema : err?.schema;
    const got = out[key];
    throw new ConfigError(
      `${label(key)} must be ${schema ? expectation(schema) : 'valid'}, got ${typeof got === 'string' ? `"${got}"` : JSON.stringify(got)}`,
    );
  }
  const config = out as Config;
  readUrlFiles(config, sources, label);
  readAdminToken(config, label);
  const dbProblem = checkDb(config.db);
  if (dbProblem) {
    const where = config.dbFile === undefined ? label('db') : `the URL in ${config.dbFile} (${label('dbFile')})`;
    throw new ConfigError(`${where} ${dbProblem}`);
  }
  const corsProblem = checkCorsOrigin(config.corsOrigin);
  if (corsProblem) throw new ConfigError(`${label('corsOrigin')} ${corsProblem}`);
  // Failed authentications are limited along with --rate-limit, or on their own when asked for.
  if (config.rateLimit === null && sources.get('auth-fail-limit') === 'default') config.authFailLimit = null;
  if (config.redis !== null && config.rateLimit === null && config.authFailLimit === null) {
    throw new ConfigError(
      `${label('redis')} keeps rate-limit counters, but no limit is on, so it would do nothing: ` +
        'also set --rate-limit (or --auth-fail-limit), or leave Redis off',
    );
  }
  if (config.listDefaultLimit > config.listMaxLimit) {
    throw new ConfigError(
      `${label('listDefaultLimit')} (${config.listDefaultLimit}) must not exceed ${label('listMaxLimit')} (${config.listMaxLimit})`,
    );
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError(
      `${label('headersTimeoutMs')} (${config.headersTimeoutMs}) must not exceed ${label('requestTimeoutMs')} (${config.requestTimeoutMs})`,
    );
  }
  if (config.webhookLeaseMs !== undefined && config.webhookLeaseMs < config.webhookTimeoutMs + 1000) {
    throw new ConfigError(
      `${label('webhookLeaseMs')} (${config.webhookLeaseMs}) must be at least ${label('webhookTimeoutMs')} + 1000 ` +
        `(${config.webhookTimeoutMs + 1000}): an attempt must fit in it, with time to record its outcome`,
    );
  }
  checkJwtSettings(config, label);
  return Object.freeze(config);
}

/** Whether a URL carries a password ("scheme://user:password@" or "scheme://:password@"). */
const hasPassword = (url: string): boolean => /^[a-z][a-z0-9+.-]*:\/\/[^/@]*:[^/@]*@/i.test(url);

/** A file holding a secret (a URL with its password, a token), trimmed; refused when unreadable or empty. */
function readSecretFile(label: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(`${label}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text === '') throw new ConfigError(`${label}: ${path} is empty`);
  return text;
}

/** The shortest admin API secret taken: 32 bytes, as many as a token's own random part. */
export const ADMIN_TOKEN_MIN_BYTES = 32;

/** --admin-token-file: the admin API's secret, which only the admin listener can take. */
function readAdminToken(config: Config, label: (key: string) => string): void {
  if (config.adminTokenFile === undefined) return;
  if (config.adminPort === null)
    throw new ConfigError(`${label('adminTokenFile')} needs ${label('adminPort')}: the admin API is served there only`);
  const secret = readSecretFile(label('adminTokenFile'), config.adminTokenFile);
  const bytes = Buffer.byteLength(secret);
  if (bytes < ADMIN_TOKEN_MIN_BYTES)
    throw new ConfigError(
      `${label('adminTokenFile')}: ${config.adminTokenFile} must hold a secret of at least ${ADMIN_TOKEN_MIN_BYTES} bytes, ` +
        `not ${bytes} (make one with: openssl rand -base64 32)`,
    );
  config.adminToken = secret;
}

/**
 * --db-file and --redis-url-file: the URL is read from a file (trimmed), so
 * that its password is not on the command line, where every user of the
 * machine can read it (ps). Which flags still carry one there is noted for
 * the start-up warning.
 */
function readUrlFiles(config: Config, sources: Map<SettingName, Source>, label: (key: string) => string): void {
  for (const [fileKey, key] of [
    ['dbFile', 'db'],
    ['redisUrlFile', 'redis'],
  ] as const) {
    const path = config[fileKey];
    if (path === undefined) continue;
    if (sources.get(key) !== 'default')
      throw new ConfigError(`set either ${label(key)} or ${label(fileKey)}, not both`);
    const text = readSecretFile(label(fileKey), path);
    if (key === 'redis' && !isRedisUrl(text))
      throw new ConfigError(`${label(fileKey)}: ${path} must hold a redis:// or rediss:// URL`);
    config[key] = text;
  }
  const inArgv = (['db', 'redis'] as const).filter((key) => {
    const value = config[key];
    return sources.get(key) === 'flag' && typeof value === 'string' && hasPassword(value);
  });
  if (inArgv.length > 0) config.passwordsInArgv = inArgv.map((key) => `--${key}`);
}

// Where the URL of each flag in passwordsInArgv is better given.
const PASSWORD_ELSEWHERE: Record<string, string> = {
  '--db': `${SETTINGS.db.env} or ${SETTINGS.db.fallbackEnv}, or in a file named by --db-file (PGPASSWORD and PGPASSFILE work too)`,
  '--redis': `${SETTINGS.redis.env}, or in a file named by --redis-url-file`,
};

/** The start-up warning for config.passwordsInArgv: each flag that carries a password, and where to give its URL instead. */
export function argvPasswordWarning(flags: readonly string[]): string {
  const advice =
    flags.length === 1
      ? `give it in ${PASSWORD_ELSEWHERE[flags[0]!]}`
      : `give the URL of ${flags.map((flag) => `${flag} in ${PASSWORD_ELSEWHERE[flag]}`).join(', and that of ')}`;
  return (
    `${flags.join(' and ')} ${flags.length > 1 ? 'carry' : 'carries'} a password on the command line, ` +
    `where every user of this machine can read it (ps); ${advice}`
  );
}

/** JWTs are accepted when a key source is set; then issuer and audience must be pinned too. */
function checkJwtSettings(config: Config, label: (key: string) => string): void {
  if (config.jwksUrl !== undefined && config.oidcIssuer !== undefined) {
    throw new ConfigError(
      `set either ${label('jwksUrl')} or ${label('oidcIssuer')}, not both: the OIDC issuer's discovery document names its JWKS URL`,
    );
  }
  for (const key of ['jwksUrl', 'oidcIssuer'] as const) {
    const value = config[key];
    if (value !== undefined && !isHttpUrl(value)) {
      throw new ConfigError(`${label(key)} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
    }
    const unprotected = value === undefined ? undefined : unprotectedKeyUrl(new URL(value), config.jwtAllowHttp);
    if (unprotected !== undefined) throw new ConfigError(`${label(key)} ${unprotected}`);
  }
  const keySource = jwtKeySource(config);
  if (keySource === undefined) {
    const stray = (['jwtIssuer', 'jwtAudience'] as const).find((key) => config[key] !== undefined);
    if (stray) {
      throw new ConfigError(
        `${label(stray)} is set but JWTs are off: also set ${named('jwksUrl')} or ${named('oidcIssuer')}`,
      );
    }
    return;
  }
  const missing = (['jwtIssuer', 'jwtAudience'] as const).filter((key) => config[key] === undefined);
  if (missing.length > 0) {
    const source = 'jwksUrl' in keySource ? 'jwksUrl' : 'oidcIssuer';
    throw new ConfigError(
      `${label(source)} turns on JWT access tokens, which also needs ${missing.map(named).join(' and ')}: ` +
        'tokens are accepted only from the issuer (iss) and for the audience (aud) you name',
    );
  }
}

/** "--jwt-issuer (PLANTS_JWT_ISSUER)": both ways to give a setting that is missing. */
function named(key: string): string {
  const name = kebab(key) as SettingName;
  return `--${name} (${SETTINGS[name].env})`;
}

/**
 * Why signing keys may not be fetched from `url`, or undefined when they may:
 * over https, over http to this machine, or over http anywhere with
 * --jwt-allow-http. The rule holds for the configured URL and for the
 * jwks_uri an issuer's discovery document names.
 */
export function unprotectedKeyUrl(url: URL, allowHttp: boolean): string | undefined {
  if (url.protocol !== 'http:' || allowHttp || isLoopback(url.hostname)) return undefined;
  return (
    `is http:// to ${url.hostname}, another machine: anyone on the way could swap the signing keys ` +
    `and mint tokens. Use https://, or set ${named('jwtAllowHttp')} if the network between is trusted`
  );
}

/** Whether a URL's host name is this machine: localhost, 127.0.0.0/8 or ::1. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (/^localhost$|\.localhost$/i.test(host)) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/**
 * Where the signing keys of bearer JWTs come from: a JWKS URL, or an OIDC
 * issuer's discovery document. The jwks_uri the document names is held to
 * unprotectedKeyUrl too, with allowHttp (--jwt-allow-http; absent: false).
 */
export type JwtKeySource = { jwksUrl: string } | { oidcIssuer: string; allowHttp?: boolean };

/** The configured source of JWT signing keys; undefined when bearer JWTs are off. */
export function jwtKeySource(
  config: Pick<Config, 'jwksUrl' | 'oidcIssuer' | 'jwtAllowHttp'>,
): JwtKeySource | undefined {
  if (config.jwksUrl !== undefined) return { jwksUrl: config.jwksUrl };
  if (config.oidcIssuer !== undefined) return { oidcIssuer: config.oidcIssuer, allowHttp: config.jwtAllowHttp };
  return undefined;
}

/** Whether bearer JWTs are accepted (a JWKS URL or an OIDC issuer is configured). */
export function jwtEnabled(config: Pick<Config, 'jwksUrl' | 'oidcIssuer'>): boolean {
  return config.jwksUrl !== undefined || config.oidcIssuer !== undefined;
}

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

const SUPPORTED_DB_FORMS =
  'give a SQLite file path (such as ./data/plants.db) or a postgres://user:password@host:5432/database URL (postgresql:// works too)';

/**
 * Why --db cannot be used, or undefined. Anything that looks like a URL must
 * be a PostgreSQL one: otherwise a typo (postgres:/host/db, postgresql//host)
 * or another database's URL (mysql://) would silently become a new SQLite
 * file while the operator believes the service runs on their database.
 */
export function checkDb(db: string): string | undefined {
  if (isPostgresUrl(db)) {
    try {
      new URL(db);
    } catch {
      return `is not a valid PostgreSQL URL ("${withoutPassword(db)}"); ${SUPPORTED_DB_FORMS}`;
    }
    const sslmode = postgresSslMode(db);
    if (sslmode !== undefined && !SSL_MODES.includes(sslmode)) {
      return `has sslmode=${JSON.stringify(sslmode.slice(0, 40))}, which is not an SSL mode; use one of ${SSL_MODES.slice(0, -1).join(', ')} or ${SSL_MODES.at(-1)!}`;
    }
    return undefined;
  }
  // A scheme of two letters or more ("C:" is a Windows drive), or postgres
  // followed by the wrong punctuation.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(db)?.[1];
  if (scheme !== undefined || db.includes('://') || /^postgres(ql)?(:|\/\/)/i.test(db)) {
    const what = scheme && !/^postgres(ql)?$/i.test(scheme) ? `a ${scheme}: URL` : 'a malformed PostgreSQL URL';
    return `looks like ${what} ("${withoutPassword(db)}"), which is not supported; ${SUPPORTED_DB_FORMS}`;
  }
  return undefined;
}

/**
 * Why --cors-origin cannot be used, or undefined. Each origin must be written
 * exactly as browsers send it in Origin (scheme, lower-case host, port only
 * when not the default, no path, no trailing slash): the plugin compares
 * strings, so any other spelling would never match. Wildcards are refused
 * except "*" alone.
 */
export function checkCorsOrigin(value: string): string | undefined {
  if (value === 'off' || value === '*') return undefined;
  const expected = 'must be off, * or origins such as https://app.example.com separated by commas';
  for (const raw of value.split(',')) {
    const origin = raw.trim();
    const shown = JSON.stringify(origin.slice(0, 200));
    if (origin.includes('*')) return `${expected}; a wildcard is allowed only as * alone, got ${shown}`;
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return `${expected}, got ${shown}`;
    if (url.username || url.password) return `${expected}, got one with a user or password (${url.origin})`;
    if (url.origin !== origin)
      return `${expected}, got ${shown}: an origin is scheme, host and port as browsers send it, no path, no trailing slash (write it as ${url.origin})`;
  }
  return undefined;
}

/** What the SQLite store needs from the settings. */
export interface SqliteConfig {
  path: string;
  durability: Durability;
}

/** What the PostgreSQL store needs from the settings. */
export interface PostgresConfig {
  url: string;
  poolSize: number;
  /** 0 disables the timeout. */
  statementTimeoutMs: number;
  durability: Durability;
  /**
   * transaction: a transaction pooler (PgBouncer pool_mode=transaction) sits in
   * front, so no named prepared statements and no startup parameters.
   */
  pooler: PgPooler;
}

export type StoreConfig = { kind: 'sqlite'; sqlite: SqliteConfig } | { kind: 'postgres'; postgres: PostgresConfig };

/** The store that --db names, with the settings that store uses. */
export function storeConfig(
  config: Pick<Config, 'db' | 'durability' | 'pgPoolSize' | 'pgStatementTimeoutMs'> & Partial<Pick<Config, 'pgPooler'>>,
): StoreConfig {
  if (isPostgresUrl(config.db)) {
    return {
      kind: 'postgres',
      postgres: {
        url: config.db,
        poolSize: config.pgPoolSize,
        statementTimeoutMs: config.pgStatementTimeoutMs,
        durability: config.durability,
        pooler: config.pgPooler ?? 'none',
      },
    };
  }
  return { kind: 'sqlite', sqlite: { path: config.db, durability: config.durability } };
}

/**
 * The file holding the key that seals webhook secrets: --webhook-key-file, or
 * else next to the SQLite file (so a copy of the database alone does not carry
 * it), or ./data/webhook.key with PostgreSQL.
 */
export function webhookKeyPath(config: Pick<Config, 'db' | 'webhookKeyFile'>): string {
  if (config.webhookKeyFile) return config.webhookKeyFile;
  return isPostgresUrl(config.db) ? './data/webhook.key' : `${config.db}.webhook-key`;
}
