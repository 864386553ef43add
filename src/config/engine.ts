import { Value } from '@sinclair/typebox/value';
import type { ConfigFile } from './config-file.js';
import type { RuleContext, Source } from './rule.js';
import { RULES } from './rules.js';
import { ConfigError, ConfigSchema, camel, kebab, type Config } from './schema.js';
import { ALL_SETTINGS, SETTINGS, settingSpec, withValueFiles, type SettingName } from './settings.js';
import { expectation, fileText, readValue } from './text.js';

function sourceLabel(name: SettingName, source: Source, file?: ConfigFile): string {
  if (source === 'env') return SETTINGS[name].env;
  if (source === 'fallback-env') return settingSpec(name).fallbackEnv!;
  if (source === 'file') return `${name} in ${file?.path ?? 'the configuration file'}`;
  return `--${name}`;
}

/**
 * The one place settings are read. A setting's value comes from, first to
 * last: its flag, its PLANTS_ environment variable, its older variable
 * (DATABASE_URL, PORT), the configuration file, its default. The result is
 * validated, held to the rules across settings (rules.ts) and frozen.
 *
 * Only the settings in `only` are read from `flags`, `env` and `file` and
 * validated; the others take their defaults, so a command is not refused for
 * an environment variable it never uses (PORT=abc does not break `token
 * list`). An error names the flag, the variable or the file the bad value
 * came from.
 */
export function loadConfig(...args: Parameters<typeof readSettings>): Readonly<Config> {
  return readSettings(...args).config;
}

/** The settings read, and where each one's value came from (`plant-store config` shows both). */
export interface SettingsRead {
  config: Readonly<Config>;
  sources: ReadonlyMap<SettingName, Source>;
  file: ConfigFile | undefined;
}

/** loadConfig, with the source of each setting. */
export function readSettings(
  flags: Partial<Record<SettingName, string>>,
  env: Readonly<Record<string, string | undefined>>,
  extra: Partial<Pick<Config, 'logPretty' | 'tokenCacheMs' | 'jwksCooldownMs' | 'jwksRetryMs'>> = {},
  only: readonly SettingName[] = ALL_SETTINGS,
  file?: ConfigFile,
): SettingsRead {
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
  const context: RuleContext = { source: (name) => sources.get(name), label };
  for (const rule of RULES) rule.check(config, context);
  return { config: Object.freeze(config), sources, file };
}
