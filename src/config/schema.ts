import { Type, type Static } from '@sinclair/typebox';
import { ALL_SETTINGS, SETTINGS, type SettingName } from './settings.js';

export const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
export const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type SettingSchemas = { -readonly [K in SettingName as Camel<K>]: (typeof SETTINGS)[K]['schema'] };

/** The frozen result of reading the settings: one key per setting (camelCase), made of their schemas. */
export const ConfigSchema = Type.Object({
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
