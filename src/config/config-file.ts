import { parse as parseToml } from 'smol-toml';
import { nearest } from './nearest.js';
import { ConfigError } from './schema.js';
import { ALL_SETTINGS, SETTINGS } from './settings.js';

/** A configuration file (--config FILE), parsed: setting names (as the flags, without --) to values. */
export interface ConfigFile {
  path: string;
  values: Readonly<Record<string, unknown>>;
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
