import { availableParallelism } from 'node:os';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

// Every setting: its flag, its environment variable, its default and how to
// read it. The CLI's help text and the README's table are written from this.
export const SETTINGS = {
  host: { env: 'HOST', default: '127.0.0.1', kind: 'string', help: 'address to listen on' },
  port: { env: 'PORT', default: '8080', kind: 'int', help: 'TCP port to listen on (0 picks a free one)' },
  db: {
    env: 'DATABASE_URL',
    default: './data/plants.db',
    kind: 'string',
    help: 'SQLite file path, or a postgres:// URL',
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
    kind: 'string',
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
  'log-level': {
    env: 'LOG_LEVEL',
    default: 'info',
    kind: 'string',
    help: 'fatal, error, warn, info, debug, trace or silent',
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
} as const satisfies Record<string, { env: string; default: string; kind: 'string' | 'int' | 'workers'; help: string }>;

export type SettingName = keyof typeof SETTINGS;

const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1 }),
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  db: Type.String({ minLength: 1 }),
  workers: Type.Integer({ minimum: 1, maximum: 256 }),
  durability: Type.Union([Type.Literal('full'), Type.Literal('normal')]),
  bodyLimit: Type.Integer({ minimum: 64, maximum: 1024 ** 3 }),
  listDefaultLimit: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
  listMaxLimit: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
  logLevel: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
  ),
  logPretty: Type.Boolean(),
  pgPoolSize: Type.Integer({ minimum: 1, maximum: 1000 }),
  pgStatementTimeoutMs: Type.Integer({ minimum: 0 }),
  tokenCacheMs: Type.Integer({ minimum: 0, maximum: 900 }),
});
export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

function readValue(name: SettingName, raw: string): string | number {
  const setting = SETTINGS[name];
  if (setting.kind === 'string') return raw;
  if (setting.kind === 'workers' && raw === 'auto') return availableParallelism();
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--${name} must be a whole number, got "${raw}"`);
  return Number(raw);
}

/**
 * The one place settings are read: flags win over environment variables,
 * which win over defaults. The result is validated and frozen.
 */
export function loadConfig(
  flags: Partial<Record<SettingName, string>>,
  env: Readonly<Record<string, string | undefined>>,
  extra: Partial<Pick<Config, 'logPretty' | 'tokenCacheMs'>> = {},
): Readonly<Config> {
  const out: Record<string, unknown> = { logPretty: false, tokenCacheMs: 500, ...extra };
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const raw = flags[name] ?? env[SETTINGS[name].env] ?? SETTINGS[name].default;
    out[camel(name)] = readValue(name, raw);
  }
  if (!Value.Check(ConfigSchema, out)) {
    const err = Value.Errors(ConfigSchema, out).First();
    const key = err?.path.slice(1) ?? '';
    const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new ConfigError(`invalid --${flag}: ${err?.message ?? 'bad value'} (got ${JSON.stringify(err?.value)})`);
  }
  const config = out as Config;
  if (config.listDefaultLimit > config.listMaxLimit) {
    throw new ConfigError('--list-default-limit must not exceed --list-max-limit');
  }
  return Object.freeze(config);
}

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}
