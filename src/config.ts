import { availableParallelism } from 'node:os';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { INT32_MAX } from './schemas/plant.js';

export const DURABILITIES = ['full', 'normal'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

// Every setting: its flag, its environment variable, its default and how to
// read it. The CLI's help text and the README's table are written from this.
export const SETTINGS = {
  host: { env: 'HOST', default: '127.0.0.1', kind: 'string', help: 'address to listen on' },
  port: { env: 'PORT', default: '8080', kind: 'int', help: 'TCP port to listen on (0 picks a free one)' },
  db: {
    env: 'DATABASE_URL',
    default: './data/plants.db',
    kind: 'string',
    help: 'SQLite file path, or a postgres:// or postgresql:// URL',
  },
  workers: {
    env: 'PLANTS_WORKERS',
    default: '1',
    kind: 'workers',
    help: 'worker processes sharing the port; "auto" = one per CPU',
  },
  durability: {
    env: 'PLANTS_DURABILITY',
    default: 'full',
    kind: 'enum',
    values: DURABILITIES,
    help: 'full: a 2xx write survives power loss; normal: it survives a crash of the process',
  },
  'body-limit': { env: 'PLANTS_BODY_LIMIT', default: '1048576', kind: 'int', help: 'largest request body in bytes' },
  'list-default-limit': {
    env: 'PLANTS_LIST_DEFAULT_LIMIT',
    default: '1000',
    kind: 'int',
    help: 'page size of GET /plants without ?limit',
  },
  'list-max-limit': {
    env: 'PLANTS_LIST_MAX_LIMIT',
    default: '1000',
    kind: 'int',
    help: 'largest page size; a larger ?limit is clamped to it',
  },
  'list-cache-bytes': {
    env: 'PLANTS_LIST_CACHE_BYTES',
    default: '16777216',
    kind: 'int',
    help: 'memory for reusing unchanged list pages (SQLite only); 0 turns it off',
  },
  'headers-timeout-ms': {
    env: 'PLANTS_HEADERS_TIMEOUT_MS',
    default: '10000',
    kind: 'int',
    help: 'a new connection must send its whole request head within this time, or it is closed',
  },
  'request-timeout-ms': {
    env: 'PLANTS_REQUEST_TIMEOUT_MS',
    default: '30000',
    kind: 'int',
    help: 'a request not received, handled and answered within this time is cut',
  },
  'keep-alive-timeout-ms': {
    env: 'PLANTS_KEEP_ALIVE_TIMEOUT_MS',
    default: '5000',
    kind: 'int',
    help: 'how long an idle keep-alive connection stays open after its last answer',
  },
  'max-connections': {
    env: 'PLANTS_MAX_CONNECTIONS',
    default: '10000',
    kind: 'int',
    help: 'open connections per process; beyond it new connections are closed at once (0: no cap)',
  },
  'log-level': {
    env: 'LOG_LEVEL',
    default: 'info',
    kind: 'enum',
    values: LOG_LEVELS,
    help: 'fatal, error, warn, info, debug, trace or silent (any case)',
  },
  'access-log': {
    env: 'PLANTS_ACCESS_LOG',
    default: 'false',
    kind: 'bool',
    help: 'log a line per request at info (request id, method, URL, status, time, owner)',
  },
  'slow-request-ms': {
    env: 'PLANTS_SLOW_REQUEST_MS',
    default: '1000',
    kind: 'int',
    help: 'log requests that take at least this long at warn; 0 turns it off',
  },
  'pg-pool-size': {
    env: 'PLANTS_PG_POOL_SIZE',
    default: '10',
    kind: 'int',
    help: 'PostgreSQL connections per process',
  },
  'pg-statement-timeout-ms': {
    env: 'PLANTS_PG_STATEMENT_TIMEOUT_MS',
    default: '5000',
    kind: 'int',
    help: 'PostgreSQL statement timeout in milliseconds',
  },
  'pg-pooler': {
    env: 'PLANTS_PG_POOLER',
    default: 'none',
    kind: 'string',
    help: 'none, or transaction: PostgreSQL is behind a transaction-pooling PgBouncer (no named prepared statements, no startup parameters)',
  },
  'jwks-url': {
    env: 'PLANTS_JWKS_URL',
    default: '',
    kind: 'string',
    help: 'accept JWT access tokens signed by the keys of this JWKS URL (needs --jwt-issuer and --jwt-audience)',
  },
  'oidc-issuer': {
    env: 'PLANTS_OIDC_ISSUER',
    default: '',
    kind: 'string',
    help: 'accept JWT access tokens of this OpenID Connect issuer; its JWKS URL is discovered (instead of --jwks-url)',
  },
  'jwt-issuer': {
    env: 'PLANTS_JWT_ISSUER',
    default: '',
    kind: 'string',
    help: 'the iss claim a JWT must carry (required with JWTs)',
  },
  'jwt-audience': {
    env: 'PLANTS_JWT_AUDIENCE',
    default: '',
    kind: 'string',
    help: 'the aud claim a JWT must carry (required with JWTs)',
  },
  'jwt-owner-claim': {
    env: 'PLANTS_JWT_OWNER_CLAIM',
    default: 'sub',
    kind: 'string',
    help: 'the JWT claim that names the owner',
  },
  'cors-origin': {
    env: 'PLANTS_CORS_ORIGIN',
    default: 'off',
    kind: 'string',
    help: 'origins whose browser pages may call the API: "*", or a comma-separated list such as https://app.example.com; off by default',
  },
  'admin-port': {
    env: 'PLANTS_ADMIN_PORT',
    default: 'off',
    kind: 'port-or-off',
    help: 'port of the admin listener on --host, serving /metrics, /healthz and /readyz (0 picks a free one); off: none',
  },
  'rate-limit': {
    env: 'PLANTS_RATE_LIMIT',
    default: 'off',
    kind: 'rate',
    help: 'requests per token owner: N/1s, N/1m or N/1h; off: no limit',
  },
  'auth-fail-limit': {
    env: 'PLANTS_AUTH_FAIL_LIMIT',
    default: '20/1m',
    kind: 'rate',
    help: 'failed authentications per client address (N/1s, N/1m, N/1h or off); applies when --rate-limit is on, or when set',
  },
  redis: {
    env: 'PLANTS_REDIS_URL',
    default: 'off',
    kind: 'redis-url',
    help: 'redis:// or rediss:// URL where every process keeps its rate-limit counters; off: each process counts alone',
  },
  'redis-key-prefix': {
    env: 'PLANTS_REDIS_KEY_PREFIX',
    default: 'plant-store:',
    kind: 'string',
    help: 'prefix of the rate-limit counter keys in Redis',
  },
  'webhooks-allow-private': {
    env: 'PLANTS_WEBHOOKS_ALLOW_PRIVATE',
    default: 'false',
    kind: 'bool',
    help: 'deliver webhooks to loopback, private and link-local addresses too (tests, internal networks)',
  },
  'webhook-key-file': {
    env: 'PLANTS_WEBHOOK_KEY_FILE',
    default: '',
    kind: 'string',
    help: 'file with the key that encrypts webhook secrets; unset: next to the SQLite file (<db>.webhook-key), or ./data/webhook.key with PostgreSQL',
  },
  'webhook-timeout-ms': {
    env: 'PLANTS_WEBHOOK_TIMEOUT_MS',
    default: '10000',
    kind: 'int',
    help: 'time limit of one webhook delivery attempt in milliseconds',
  },
  'events-retention-ms': {
    env: 'PLANTS_EVENTS_RETENTION_MS',
    default: '86400000',
    kind: 'int',
    help: 'how long plant events are kept for resuming live streams (GET /plants/events) with Last-Event-ID',
  },
  'events-max-kept': {
    env: 'PLANTS_EVENTS_MAX_KEPT',
    default: '1000000',
    kind: 'int',
    help: 'most plant events kept for resuming, over all owners; older ones are pruned first',
  },
  'events-poll-ms': {
    env: 'PLANTS_EVENTS_POLL_MS',
    default: '100',
    kind: 'int',
    help: 'how often live streams look for events written by other processes or instances',
  },
  'events-keepalive-ms': {
    env: 'PLANTS_EVENTS_KEEPALIVE_MS',
    default: '15000',
    kind: 'int',
    help: 'an idle live stream gets a comment line this often, so proxies keep it open',
  },
  'events-max-streams': {
    env: 'PLANTS_EVENTS_MAX_STREAMS',
    default: '1000',
    kind: 'int',
    help: 'live event streams open at once per process; beyond it 429',
  },
  'events-max-streams-per-owner': {
    env: 'PLANTS_EVENTS_MAX_STREAMS_PER_OWNER',
    default: '10',
    kind: 'int',
    help: 'live event streams open at once per token owner and process; beyond it 429',
  },
  'events-buffer-bytes': {
    env: 'PLANTS_EVENTS_BUFFER_BYTES',
    default: '262144',
    kind: 'int',
    help: 'unsent bytes a live stream may hold for a slow client before it is closed',
  },
} as const satisfies Record<
  string,
  {
    env: string;
    default: string;
    kind: 'string' | 'int' | 'bool' | 'workers' | 'enum' | 'port-or-off' | 'rate' | 'redis-url';
    values?: readonly string[];
    help: string;
  }
>;

export type SettingName = keyof typeof SETTINGS;

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

const WINDOWS: Record<string, number> = { '1s': 1000, '1m': 60_000, '1h': 3_600_000 };

const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1 }),
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  db: Type.String({ minLength: 1 }),
  workers: Type.Integer({ minimum: 1, maximum: 256 }),
  durability: Type.Union(DURABILITIES.map((d) => Type.Literal(d))),
  bodyLimit: Type.Integer({ minimum: 64, maximum: 1024 ** 3 }),
  listDefaultLimit: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
  listMaxLimit: Type.Integer({ minimum: 1, maximum: INT32_MAX }),
  listCacheBytes: Type.Integer({ minimum: 0, maximum: 2 ** 40 }),
  headersTimeoutMs: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
  requestTimeoutMs: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
  keepAliveTimeoutMs: Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS }),
  maxConnections: Type.Integer({ minimum: 0, maximum: 10_000_000 }),
  logLevel: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))),
  accessLog: Type.Boolean(),
  slowRequestMs: Type.Integer({ minimum: 0, maximum: INT32_MAX }),
  logPretty: Type.Boolean(),
  pgPoolSize: Type.Integer({ minimum: 1, maximum: 1000 }),
  pgStatementTimeoutMs: Type.Integer({ minimum: 0, maximum: MAX_STATEMENT_TIMEOUT_MS }),
  pgPooler: Type.Union([Type.Literal('none'), Type.Literal('transaction')]),
  tokenCacheMs: Type.Integer({ minimum: 0, maximum: 900 }),
  jwksUrl: Type.Optional(Type.String({ minLength: 1 })),
  oidcIssuer: Type.Optional(Type.String({ minLength: 1 })),
  jwtIssuer: Type.Optional(Type.String({ minLength: 1 })),
  jwtAudience: Type.Optional(Type.String({ minLength: 1 })),
  jwtOwnerClaim: Type.String({ minLength: 1, maxLength: 256 }),
  /** Least time between two JWKS fetches caused by tokens whose key is unknown. */
  jwksCooldownMs: Type.Integer({ minimum: 0, maximum: 30_000 }),
  /** "off", "*", or origins separated by commas (checked by loadConfig). */
  corsOrigin: Type.String({ minLength: 1 }),
  adminPort: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()]),
  rateLimit: Type.Union([Rate, Type.Null()]),
  authFailLimit: Type.Union([Rate, Type.Null()]),
  redis: Type.Union([Type.String(), Type.Null()]),
  redisKeyPrefix: Type.String({ maxLength: 200 }),
  webhooksAllowPrivate: Type.Boolean(),
  /** Unset (or empty): the default place, see webhookKeyPath. */
  webhookKeyFile: Type.Optional(Type.String()),
  webhookTimeoutMs: Type.Integer({ minimum: 100, maximum: 120_000 }),
  eventsRetentionMs: Type.Integer({ minimum: 1000, maximum: Number.MAX_SAFE_INTEGER }),
  eventsMaxKept: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  eventsPollMs: Type.Integer({ minimum: 10, maximum: 60_000 }),
  /** At most 15 s: proxies commonly close a connection idle for 30 to 60 s. */
  eventsKeepaliveMs: Type.Integer({ minimum: 10, maximum: 15_000 }),
  eventsMaxStreams: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  eventsMaxStreamsPerOwner: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  eventsBufferBytes: Type.Integer({ minimum: 1024, maximum: 1024 ** 3 }),
});
export type Config = Static<typeof ConfigSchema>;

/** full: a 2xx write survives power loss; normal: it survives a crash of the process. */
export type Durability = Config['durability'];

/** What sits between Plant Store and PostgreSQL: nothing (or a session pooler), or a transaction pooler. */
export type PgPooler = Config['pgPooler'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export const ALL_SETTINGS = Object.keys(SETTINGS) as readonly SettingName[];

/** Where a setting's value came from; an error names the environment variable for 'env', else the flag. */
type Source = 'flag' | 'env' | 'default';

function sourceLabel(name: SettingName, source: Source): string {
  return source === 'env' ? SETTINGS[name].env : `--${name}`;
}

function readValue(name: SettingName, raw: string, source: Source): string | number | boolean | Rate | null {
  const setting: (typeof SETTINGS)[SettingName] = SETTINGS[name];
  if (setting.kind === 'string') return raw;
  if (setting.kind === 'enum') {
    const value = raw.toLowerCase();
    if (!(setting.values as readonly string[]).includes(value))
      throw new ConfigError(`${sourceLabel(name, source)} must be one of ${setting.values.join(', ')}, got "${raw}"`);
    return value;
  }
  if (setting.kind === 'bool') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${sourceLabel(name, source)} must be true or false, got "${raw}"`);
  }
  if (setting.kind === 'workers' && raw === 'auto') return availableParallelism();
  if (setting.kind === 'port-or-off' && raw === 'off') return null;
  if (setting.kind === 'redis-url') {
    if (raw === 'off') return null;
    if (!/^rediss?:\/\/./i.test(raw))
      throw new ConfigError(`${sourceLabel(name, source)} must be a redis:// or rediss:// URL, or off`);
    return raw;
  }
  if (setting.kind === 'rate') {
    if (raw === 'off') return null;
    const m = /^(\d{1,10})\/(1s|1m|1h)$/.exec(raw);
    if (!m || Number(m[1]) < 1)
      throw new ConfigError(
        `${sourceLabel(name, source)} must be N/1s, N/1m or N/1h with N >= 1, or off; got "${raw}"`,
      );
    return { max: Number(m[1]), windowMs: WINDOWS[m[2]!]! };
  }
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${sourceLabel(name, source)} must be a whole number, got "${raw}"`);
  return Number(raw);
}

/**
 * The one place settings are read: flags win over environment variables,
 * which win over defaults. The result is validated and frozen.
 *
 * Only the settings in `only` are read from `flags` and `env` and validated;
 * the others take their defaults, so a command is not refused for an
 * environment variable it never uses (PORT=abc does not break `token list`).
 * An error names the flag or the environment variable the bad value came from.
 */
export function loadConfig(
  flags: Partial<Record<SettingName, string>>,
  env: Readonly<Record<string, string | undefined>>,
  extra: Partial<Pick<Config, 'logPretty' | 'tokenCacheMs' | 'jwksCooldownMs'>> = {},
  only: readonly SettingName[] = ALL_SETTINGS,
): Readonly<Config> {
  const out: Record<string, unknown> = { logPretty: false, tokenCacheMs: 500, jwksCooldownMs: 10_000, ...extra };
  const sources = new Map<SettingName, Source>();
  for (const name of ALL_SETTINGS) {
    const flag = only.includes(name) ? flags[name] : undefined;
    const fromEnv = only.includes(name) ? env[SETTINGS[name].env] : undefined;
    const source: Source = flag !== undefined ? 'flag' : fromEnv !== undefined ? 'env' : 'default';
    sources.set(name, source);
    const raw = flag ?? fromEnv ?? SETTINGS[name].default;
    // A setting without a default is unset when empty (PLANTS_JWKS_URL= in a compose file).
    if (raw === '' && SETTINGS[name].default === '') continue;
    out[camel(name)] = readValue(name, raw, source);
  }
  const label = (key: string): string => {
    const name = kebab(key);
    const source = sources.get(name as SettingName);
    return source ? sourceLabel(name as SettingName, source) : `--${name}`;
  };
  if (!Value.Check(ConfigSchema, out)) {
    const err = Value.Errors(ConfigSchema, out).First();
    const key = err?.path.slice(1) ?? '';
    throw new ConfigError(`invalid ${label(key)}: ${err?.message ?? 'bad value'} (got ${JSON.stringify(err?.value)})`);
  }
  const config = out as Config;
  const dbProblem = checkDb(config.db);
  if (dbProblem) throw new ConfigError(`${label('db')} ${dbProblem}`);
  const corsProblem = checkCorsOrigin(config.corsOrigin);
  if (corsProblem) throw new ConfigError(`${label('corsOrigin')} ${corsProblem}`);
  // Failed authentications are limited along with --rate-limit, or on their own when asked for.
  if (config.rateLimit === null && sources.get('auth-fail-limit') === 'default') config.authFailLimit = null;
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
  checkJwtSettings(config, label);
  return Object.freeze(config);
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** Where the signing keys of bearer JWTs come from: a JWKS URL, or an OIDC issuer's discovery document. */
export type JwtKeySource = { jwksUrl: string } | { oidcIssuer: string };

/** The configured source of JWT signing keys; undefined when bearer JWTs are off. */
export function jwtKeySource(config: Pick<Config, 'jwksUrl' | 'oidcIssuer'>): JwtKeySource | undefined {
  if (config.jwksUrl !== undefined) return { jwksUrl: config.jwksUrl };
  if (config.oidcIssuer !== undefined) return { oidcIssuer: config.oidcIssuer };
  return undefined;
}

/** Whether bearer JWTs are accepted (a JWKS URL or an OIDC issuer is configured). */
export function jwtEnabled(config: Pick<Config, 'jwksUrl' | 'oidcIssuer'>): boolean {
  return jwtKeySource(config) !== undefined;
}

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** A URL's password replaced by "***", for messages. */
export const withoutPassword = (text: string): string => text.replace(/^([^:/]*:\/\/[^:@/]*:)[^@/]*@/, '$1***@');

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
      return undefined;
    } catch {
      return `is not a valid PostgreSQL URL ("${withoutPassword(db)}"); ${SUPPORTED_DB_FORMS}`;
    }
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

/** Why --cors-origin cannot be used, or undefined. */
export function checkCorsOrigin(value: string): string | undefined {
  if (value === 'off' || value === '*') return undefined;
  for (const origin of value.split(',')) {
    // What browsers send in Origin: scheme, host and port, no path, no trailing slash.
    if (!/^https?:\/\/[^/\s,]+$/i.test(origin.trim()))
      return `must be off, * or origins such as https://app.example.com separated by commas, got "${origin.trim()}" (no path, no trailing slash)`;
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
