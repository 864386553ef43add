import { NETWORK } from './settings/network.js';
import { STORAGE } from './settings/storage.js';
import { AUTH } from './settings/auth.js';
import { WEBHOOKS } from './settings/webhooks.js';
import { EVENTS } from './settings/events.js';
import { LIMITS } from './settings/limits.js';
import { OBSERVABILITY } from './settings/observability.js';
import { TRACING } from './settings/tracing.js';
import type { SettingSpec } from './setting-spec.js';

// Every setting, once: its flag (the key), its environment variable, its
// default, what a valid value is (schema, which also says how its text is
// read: a whole number, true or false, one of some words, off for null), the
// topic it is listed under in --help and the placeholder of its value there.
// The help text, the configuration file and docs/reference/configuration.md
// (npm run docs:config) are all written from this table.
//
// An entry: { group, env, default, arg, schema, help }, plus `fallbackEnv`
// (an older variable read when `env` is unset), `list` (comma-separated
// values; an array in a configuration file) and `text` (what the schema
// cannot say about the text).
export const SETTINGS = {
  ...NETWORK,
  ...STORAGE,
  ...AUTH,
  ...WEBHOOKS,
  ...EVENTS,
  ...LIMITS,
  ...OBSERVABILITY,
  ...TRACING,
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

export const ALL_SETTINGS = Object.keys(SETTINGS) as readonly SettingName[];

/** A setting's entry, seen through the common shape (fallbackEnv, text and list are optional). */
export const settingSpec = (name: SettingName): SettingSpec => SETTINGS[name];

/** Whether a setting is a switch: on with its bare flag, true or false elsewhere. */
export const isSwitch = (name: SettingName): boolean =>
  (settingSpec(name).schema as { type?: string }).type === 'boolean';

// The settings whose value a file may hold instead (key: the file's setting).
export const FILE_OF: Partial<Record<SettingName, SettingName>> = { 'db-file': 'db', 'redis-url-file': 'redis' };

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
