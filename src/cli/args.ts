import { parseArgs, type ParseArgsConfig } from 'node:util';
import { checkOwner } from '../manage/tokens.js';
import {
  SETTINGS,
  SETTING_GROUPS,
  isSwitch,
  type loadConfig,
  nearest,
  parseConfigFile,
  readOperatorFile,
  readSettings,
  settingSpec,
  type Config,
  type SettingsRead,
  type SettingName,
  withValueFiles,
} from '../config.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

export type Env = Readonly<Record<string, string | undefined>>;

export type ShutdownSignal = 'SIGINT' | 'SIGTERM';

/** Where serve hears SIGINT and SIGTERM: `process` in the executable, any emitter in a test. */
export interface SignalSource {
  on(signal: ShutdownSignal, listener: (signal: ShutdownSignal) => void): unknown;
  off(signal: ShutdownSignal, listener: (signal: ShutdownSignal) => void): unknown;
}

/** Everything a command may touch of the outside world; main() reads nothing else. */
export interface CliIo {
  env: Env;
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Whether stdout is a terminal (logs are pretty-printed there). */
  isTTY: boolean;
  signals: SignalSource;
}

export type CommandContext = CliIo;

export type ArgValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** --owner: required, and a valid owner name. Checked before any store is opened, so a bad owner touches no database. */
export function ownerFlag(values: ArgValues): string {
  return checkOwner(values.owner, '--owner');
}

/** A flag of a command's own (not a setting): its type, help, the default shown in help and its value's placeholder. */
export interface CommandFlag {
  type: 'string' | 'boolean';
  multiple?: boolean;
  help: string;
  default?: string;
  /** Placeholder in help; by default the flag's name in capitals. */
  arg?: string;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /**
   * Settings from config.ts this command accepts as flags (and from --config
   * FILE); the file that may hold one's value comes with it (db brings db-file).
   */
  settings: SettingName[];
  /** Takes positional arguments (ids); any other command refuses them. */
  positionals?: true;
  /** What it prints where, and its exit codes beyond 0, 1 and 2 (for docs/reference/cli.md). */
  output: string;
  /** Flags of its own. */
  flags?: Record<string, CommandFlag>;
  run(ctx: CommandContext, values: ArgValues, positionals: string[]): Promise<number>;
}

/** The settings a command takes: those it names, and the files that may hold their values (--db-file). */
const commandSettings = (cmd: Pick<Command, 'settings'>): SettingName[] => withValueFiles(cmd.settings);

/** --json: the same flag, with the command's own words for what it prints. */
export const jsonFlag = (what: string): CommandFlag => ({ type: 'boolean', help: `print ${what} as one JSON object` });

const CONFIG_FLAG: CommandFlag = {
  type: 'string',
  arg: 'FILE',
  help: 'read settings from a JSON or TOML file, keys named as the flags; flags and environment variables win over it (env PLANTS_CONFIG)',
};

const HELP_WIDTH = 100;

/** Two columns: the flag, then its help wrapped to HELP_WIDTH with a hanging indent. */
function columns(rows: [string, string][], width: number): string[] {
  const lines: string[] = [];
  for (const [flag, help] of rows) {
    const words = help.split(' ');
    let line = flag.length + 2 < width ? `  ${flag}`.padEnd(width) : `  ${flag}`;
    if (flag.length + 2 >= width) {
      lines.push(line);
      line = ' '.repeat(width);
    }
    let empty = true;
    for (const word of words) {
      if (!empty && line.length + 1 + word.length > HELP_WIDTH) {
        lines.push(line);
        line = ' '.repeat(width);
        empty = true;
      }
      line += empty ? word : ` ${word}`;
      empty = false;
    }
    lines.push(line);
  }
  return lines;
}

/** Text wrapped to HELP_WIDTH, its lines after the first indented by `indent` columns. */
export function wrap(text: string, indent = 0): string[] {
  const lines: string[] = [];
  const lead = /^ */.exec(text)![0];
  let line = lead;
  for (const word of text.slice(lead.length).split(' ')) {
    if (line.trim() !== '' && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = ' '.repeat(indent);
    }
    line += line.trim() === '' ? word : ` ${word}`;
  }
  return [...lines, line];
}

const placeholder = (name: string, f: CommandFlag) =>
  f.type === 'boolean' ? `--${name}` : `--${name} ${f.arg ?? name.toUpperCase().replace(/-/g, '_')}`;

/** Where a setting may also be given: its environment variables and its default. */
function settingFootnote(name: SettingName): string {
  const s = settingSpec(name);
  const env = s.fallbackEnv ? `env ${s.env}, or ${s.fallbackEnv}` : `env ${s.env}`;
  return `(${env}${s.default === '' ? '' : `; default: ${s.default}`})`;
}

export function helpText(cmd: Command): string {
  const own: [string, string][] = Object.entries(cmd.flags ?? {}).map(([name, f]) => [
    placeholder(name, f),
    f.help + (f.default ? ` (default: ${f.default})` : ''),
  ]);
  const groups = SETTING_GROUPS.map((group) => ({
    group,
    rows: commandSettings(cmd)
      .filter((name) => SETTINGS[name].group === group)
      .map((name): [string, string] => {
        const s = settingSpec(name);
        return [isSwitch(name) ? `--${name}` : `--${name} ${s.arg}`, `${s.help} ${settingFootnote(name)}`];
      }),
  })).filter((g) => g.rows.length > 0);
  const common: [string, string][] = [
    [placeholder('config', CONFIG_FLAG), CONFIG_FLAG.help],
    ['-h, --help', 'show this help'],
  ];
  const all = [...own, ...groups.flatMap((g) => g.rows), ...common];
  const width = Math.min(Math.max(...all.map(([f]) => f.length)) + 4, 36);
  const title = (g: string) => `${g[0]!.toUpperCase()}${g.slice(1)}:`;
  // A command with settings of one topic only (--db) lists them with its own options.
  const sections: [string, [string, string][]][] =
    groups.length > 1
      ? [['Options:', own], ...groups.map((g): [string, [string, string][]] => [title(g.group), g.rows])]
      : [['Options:', [...own, ...groups.flatMap((g) => g.rows)]]];
  sections.push(['Common:', common]);
  return [
    ...wrap(`Usage: plant-store ${cmd.usage}`, 'Usage: plant-store '.length),
    '',
    ...wrap(cmd.summary),
    ...sections.filter(([, rows]) => rows.length > 0).flatMap(([head, rows]) => ['', head, ...columns(rows, width)]),
    '',
  ].join('\n');
}

/** What a one-letter option means to most tools (-p 8080 is a port), for the flag a command has of that name. */
const USUAL_SHORT: Readonly<Record<string, string>> = {
  p: 'port',
  H: 'host',
  d: 'db',
  c: 'config',
  o: 'owner',
  u: 'url',
  j: 'json',
  s: 'scope',
  e: 'events',
};

/**
 * The flag a mistyped option most likely meant. A one-letter option is no
 * typo of a long name (its edit distance to "db" says nothing): it means its
 * usual flag, when the command has it, and otherwise nothing we could name.
 */
function guessOption(option: string, known: readonly string[]): string | undefined {
  const short = /^-([A-Za-z])$/.exec(option)?.[1];
  if (short === undefined) return nearest(option.replace(/^-+/, ''), known);
  const usual = USUAL_SHORT[short];
  return usual !== undefined && known.includes(usual) ? usual : undefined;
}

/** parseArgs' complaint in the project's words. */
function usageProblem(error: Error & { code?: string }, known: readonly string[]): string {
  const message = error.message;
  const option = /'(?:-\w, )?(--?[^' <]+)/.exec(message)?.[1] ?? '';
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const guess = guessOption(option, known);
    return `unknown option ${option}${guess ? ` (did you mean --${guess}?)` : ''}`;
  }
  if (/argument missing/.test(message)) return `${option} needs a value`;
  if (/does not take an argument/.test(message)) return `${option} takes no value`;
  if (/ambiguous/.test(message))
    return `${option} needs a value; to give one that starts with a dash, write ${option}=-VALUE`;
  return message.split('\n')[0]!;
}

export function parseCommandArgs(cmd: Command, argv: string[]) {
  const options: ParseArgsConfig['options'] = { help: { type: 'boolean', short: 'h' } };
  if (cmd.settings.length > 0) options.config = { type: 'string' };
  for (const name of commandSettings(cmd)) options[name] = { type: isSwitch(name) ? 'boolean' : 'string' };
  for (const [name, f] of Object.entries(cmd.flags ?? {}))
    options[name] = { type: f.type, multiple: f.multiple ?? false };
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const problem = usageProblem(error as Error, Object.keys(options));
    throw new UsageError(`${problem}\nRun "plant-store ${cmd.name} --help" for usage.`);
  }
}

/** The config.ts settings given as flags, ready for loadConfig. */
export function settingFlags(cmd: Command, values: Record<string, unknown>): Partial<Record<SettingName, string>> {
  const out: Partial<Record<SettingName, string>> = {};
  for (const name of commandSettings(cmd)) {
    const value = values[name];
    // A boolean setting given as a bare flag (--access-log) means true.
    if (typeof value === 'string' || value === true) out[name] = String(value);
  }
  return out;
}

/**
 * The command's settings: its flags, then the environment, then the
 * configuration file (--config FILE, or PLANTS_CONFIG), then the defaults.
 */
export function commandConfig(
  cmd: Command,
  values: ArgValues,
  ctx: Pick<CliIo, 'env'>,
  extra: Parameters<typeof loadConfig>[2] = {},
): Readonly<Config> {
  return commandSettingsRead(cmd, values, ctx, extra).config;
}

/** commandConfig, with where each setting came from. */
export function commandSettingsRead(
  cmd: Command,
  values: ArgValues,
  ctx: Pick<CliIo, 'env'>,
  extra: Parameters<typeof loadConfig>[2] = {},
): SettingsRead {
  const fromFlag = typeof values.config === 'string';
  const path = fromFlag ? (values.config as string) : ctx.env.PLANTS_CONFIG || undefined;
  const setting = fromFlag ? '--config' : 'PLANTS_CONFIG';
  const file = path === undefined ? undefined : parseConfigFile(path, readOperatorFile(path, setting));
  return readSettings(settingFlags(cmd, values), ctx.env, extra, commandSettings(cmd), file);
}

/** A list-valued flag (--scope a,b or --scope a --scope b): its items. */
export function listFlag(value: ArgValues[string]): string[] {
  const parts = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return parts
    .flatMap((p) => String(p).split(','))
    .map((p) => p.trim())
    .filter(Boolean);
}
