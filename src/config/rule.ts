import { kebab, type Config } from './schema.js';
import { SETTINGS, type SettingName } from './settings.js';

/**
 * Where a setting's value came from: an error names the flag, the environment
 * variable or the configuration file it was read from.
 */
export type Source = 'flag' | 'env' | 'fallback-env' | 'file' | 'default';

/** What a rule may ask of the settings read: where each came from, and how to name it in a message. */
export interface RuleContext {
  source(name: SettingName): Source | undefined;
  /** The flag, variable or file a value was read from, by its Config key ("--port", "PLANTS_PORT"). */
  label(key: string): string;
}

/**
 * A rule across settings, checked once every value is valid on its own. It
 * throws a ConfigError naming where the values came from; a few also settle a
 * value that depends on another (the failed-authentication limit follows
 * --rate-limit) or read one from a file (--db-file).
 */
export interface Rule {
  /** What the rule is about, in a few words. */
  about: string;
  check(config: Config, context: RuleContext): void;
}

/** "--jwt-issuer (PLANTS_JWT_ISSUER)": both ways to give a setting that is missing. */
export function named(key: string): string {
  const name = kebab(key) as SettingName;
  return `--${name} (${SETTINGS[name].env})`;
}
