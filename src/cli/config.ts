import {
  ALL_SETTINGS,
  FILE_OF,
  camel,
  settingSpec,
  valueText,
  type SettingName,
  type SettingsRead,
  type Source,
} from '../config.js';
import { withoutPassword } from '../db-url.js';
import { jsonFlag, type Command } from './args.js';
import { printJson, printTable } from './rows.js';
import { serve, serveSettings } from './serve.js';

/** Where a value came from, in the four words of `config --json`. */
type SourceWord = 'flag' | 'env' | 'file' | 'default';

// The file setting that may hold a setting's value (db: db-file).
const READ_FROM = Object.fromEntries(Object.entries(FILE_OF).map(([file, holds]) => [holds, file])) as Partial<
  Record<SettingName, SettingName>
>;

interface Shown {
  name: SettingName;
  value: string | number | boolean | null;
  source: SourceWord;
  /** The source in words for the table: the variable, the file. */
  where: string;
}

/**
 * The value as the flag would carry it, typed where it is a number or a
 * switch, with URL passwords as ***. No setting holds a secret itself: keys
 * and passwords are given in files (--db-file, --webhook-key-file), whose
 * paths are shown.
 */
function shownValue(value: unknown): Shown['value'] {
  const text = valueText(value);
  if (text === undefined) return null;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  return withoutPassword(text);
}

function shown(read: SettingsRead, name: SettingName): Shown {
  const value = (read.config as Record<string, unknown>)[camel(name)];
  // A URL read from --db-file comes from where --db-file was given.
  const holder = READ_FROM[name];
  const fromFile = holder !== undefined && (read.config as Record<string, unknown>)[camel(holder)] !== undefined;
  const of = fromFile ? holder : name;
  const source: Source = read.sources.get(of) ?? 'default';
  const spec = settingSpec(of);
  const word: SourceWord = source === 'fallback-env' ? 'env' : source;
  const detail =
    source === 'env'
      ? ` ${spec.env}`
      : source === 'fallback-env'
        ? ` ${spec.fallbackEnv}`
        : source === 'file'
          ? ` ${read.file?.path}`
          : '';
  return {
    name,
    value: shownValue(value),
    source: word,
    where: `${word}${detail}${fromFile ? ` (read from --${holder})` : ''}`,
  };
}

export const configCommand: Command = {
  name: 'config',
  usage: 'config [--json] [--config FILE] [serve options]',
  summary:
    "Prints the settings serve would run with: each one's value and where it came from (flag, env, file or default). " +
    'Takes every option serve takes, and refuses what serve refuses, with the same message. Passwords in URLs are shown as ***.',
  output:
    'stdout: a table (SETTING, VALUE, SOURCE), one setting per line in the order of serve --help; SOURCE names the variable or the file. ' +
    'With --json, one object keyed by the flag name: {"port": {"value": 8080, "source": "default"}, …}, source one of flag, env, file, default; ' +
    "a number or a switch is a JSON number or boolean, a setting left unset null. Exit code 2, with serve's message, on a setting serve would refuse.",
  settings: serve.settings,
  flags: { json: jsonFlag('the settings') },
  async run(ctx, values) {
    const read = serveSettings(this, values, ctx);
    const rows = ALL_SETTINGS.map((name) => shown(read, name));
    if (values.json) {
      printJson(ctx.stdout, Object.fromEntries(rows.map((r) => [r.name, { value: r.value, source: r.source }])));
    } else {
      printTable(
        ctx.stdout,
        { setting: 'SETTING', value: 'VALUE', source: 'SOURCE' },
        rows.map((r) => ({ setting: r.name, value: r.value === null ? '' : String(r.value), source: r.where })),
      );
    }
    return 0;
  },
};
