import { availableParallelism } from 'node:os';
import type { TSchema } from '@sinclair/typebox';
import { ConfigError } from './schema.js';
import type { Rate } from './setting-spec.js';
import { settingSpec, type SettingName } from './settings.js';

// How a setting's text (a flag, a variable, a file's value) becomes its
// value: read from the setting's schema. A whole number for an integer, true
// or false (1 or 0) for a boolean, one of the words (in any case) for a union
// of literals, N/1s, N/1m or N/1h for a rate, and off for null where the
// schema allows it. The setting's `text` adds what the schema cannot say.

/** The parts of a TypeBox schema the reading looks at. */
interface SchemaShape {
  type?: string;
  anyOf?: SchemaShape[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

const WINDOWS: Record<string, number> = { '1s': 1000, '1m': 60_000, '1h': 3_600_000 };

// The Redis client reads the URL only when rate limits start; one it cannot
// parse (redis://[x) would stop the start-up there, with a bare "Invalid URL".
export const isRedisUrl = (text: string) => /^rediss?:\/\/./i.test(text) && URL.canParse(text);

export type SettingValue = string | number | boolean | Rate | null;

export function readValue(name: SettingName, raw: string, label: string): SettingValue {
  const setting = settingSpec(name);
  let schema = setting.schema as SchemaShape;
  if (schema.anyOf?.some((member) => member.type === 'null')) {
    if (raw === 'off') return null;
    const rest = schema.anyOf.filter((member) => member.type !== 'null');
    schema = rest.length === 1 ? rest[0]! : { anyOf: rest };
  }
  if (setting.text === 'redis-url' && !isRedisUrl(raw))
    throw new ConfigError(`${label} must be a redis:// or rediss:// URL, or off`);
  if (setting.text === 'auto-cpus' && raw === 'auto') return availableParallelism();
  if (schema.anyOf) {
    const words = schema.anyOf.map((member) => String(member.const));
    const value = raw.toLowerCase();
    if (!words.includes(value)) throw new ConfigError(`${label} must be one of ${words.join(', ')}, got "${raw}"`);
    return value;
  }
  if (schema.type === 'boolean') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${label} must be true or false, got "${raw}"`);
  }
  if (schema.type === 'object') {
    const m = /^(\d{1,10})\/(1s|1m|1h)$/.exec(raw);
    if (!m || Number(m[1]) < 1)
      throw new ConfigError(`${label} must be N/1s, N/1m or N/1h with N >= 1, or off; got "${raw}"`);
    return { max: Number(m[1]), windowMs: WINDOWS[m[2]!]! };
  }
  if (schema.type === 'integer') {
    if (!/^\d+$/.test(raw)) throw new ConfigError(`${label} must be a whole number, got "${raw}"`);
    return Number(raw);
  }
  return raw;
}

/** A setting's value as the text a flag would carry ("20/1m" for a rate, "off" for null); undefined when unset. */
export function valueText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (value === null) return 'off';
  if (typeof value === 'object') {
    const rate = value as Rate;
    const window = Object.entries(WINDOWS).find(([, ms]) => ms === rate.windowMs)?.[0] ?? `${rate.windowMs}ms`;
    return `${rate.max}/${window}`;
  }
  return String(value);
}

/** What a valid value of a schema is, in words ("a whole number from 0 to 65535"). */
export function expectation(schema: TSchema): string {
  const s = schema as SchemaShape;
  if (s.anyOf) {
    const nullable = s.anyOf.some((m) => m.type === 'null');
    const rest = s.anyOf.filter((m) => m.type !== 'null').map((m) => expectation(m as TSchema));
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

/** A value from a configuration file as the text a flag would carry. */
export function fileText(name: SettingName, value: unknown, label: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (Array.isArray(value) && settingSpec(name).list && value.every((v) => typeof v === 'string'))
    return value.join(',');
  const want = settingSpec(name).list ? 'a string or an array of strings' : 'a string, a number or a boolean';
  throw new ConfigError(`${label} must be ${want}, got ${JSON.stringify(value) ?? String(value)}`);
}
