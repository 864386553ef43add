import { parseArgs, type ParseArgsConfig } from 'node:util';
import { InvalidOwnerError, assertValidOwner } from '../auth/tokens.js';
import { SETTINGS, type SettingName } from '../config.js';

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
  const owner = values.owner;
  if (typeof owner !== 'string') throw new UsageError('--owner is required');
  try {
    assertValidOwner(owner);
  } catch (error) {
    throw error instanceof InvalidOwnerError ? new UsageError(`--owner: ${error.message}`) : error;
  }
  return owner;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Settings from config.ts this command accepts as flags. */
  settings: SettingName[];
  /** Takes positional arguments (ids); any other command refuses them. */
  positionals?: true;
  /** Flags of its own: name → [type, help, default shown in help]. */
  flags?: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; help: string; default?: string }>;
  run(ctx: CommandContext, values: ArgValues, positionals: string[]): Promise<number>;
}

export function helpText(cmd: Command): string {
  const rows: [string, string][] = [];
  for (const [name, f] of Object.entries(cmd.flags ?? {})) {
    const flag = f.type === 'string' ? `--${name} ${name.toUpperCase().replace(/-/g, '_')}` : `--${name}`;
    rows.push([flag, f.help + (f.default ? ` (default: ${f.default})` : '')]);
  }
  for (const name of cmd.settings) {
    const s = SETTINGS[name];
    rows.push([
      s.kind === 'bool' ? `--${name}` : `--${name} ${name.toUpperCase().replace(/-/g, '_')}`,
      `${s.help} (env ${s.env}${s.default === '' ? '' : `; default: ${s.default}`})`,
    ]);
  }
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([f]) => f.length)) + 2;
  return [
    `Usage: plant-store ${cmd.usage}`,
    '',
    cmd.summary,
    '',
    'Options:',
    ...rows.map(([f, h]) => `  ${f.padEnd(width)}${h}`),
    '',
  ].join('\n');
}

export function parseCommandArgs(cmd: Command, argv: string[]) {
  const options: ParseArgsConfig['options'] = { help: { type: 'boolean', short: 'h' } };
  for (const name of cmd.settings) options[name] = { type: SETTINGS[name].kind === 'bool' ? 'boolean' : 'string' };
  for (const [name, f] of Object.entries(cmd.flags ?? {}))
    options[name] = { type: f.type, multiple: f.multiple ?? false };
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error as Error).message;
    const unknown = /Unknown option '([^']+)'/.exec(message)?.[1];
    const first = unknown ? `unknown option ${unknown}` : message.split('\n')[0]!;
    throw new UsageError(`${first}\nRun "plant-store ${cmd.name} --help" for usage.`);
  }
}

/** The config.ts settings given as flags, ready for loadConfig. */
export function settingFlags(cmd: Command, values: Record<string, unknown>): Partial<Record<SettingName, string>> {
  const out: Partial<Record<SettingName, string>> = {};
  for (const name of cmd.settings) {
    const value = values[name];
    // A boolean setting given as a bare flag (--access-log) means true.
    if (typeof value === 'string' || value === true) out[name] = String(value);
  }
  return out;
}
