import { BackupOptionError } from '../backup/sqlite-backup.js';
import { ConfigError, editDistance, nearest } from '../config.js';
import { errorMessages } from '../store/error-causes.js';
import { UsageError, helpText, parseCommandArgs, wrap, type CliIo, type Command } from './args.js';
import { backup } from './backup.js';
import { configCommand } from './config.js';
import { exportCommand } from './export.js';
import { importCommand } from './import.js';
import { migrate } from './migrate.js';
import { restore } from './restore.js';
import { serve } from './serve.js';
import { CliError } from './store-errors.js';
import { ManageError } from '../manage/manage-error.js';
import { tokenCreate } from './token-create.js';
import { tokenList } from './token-list.js';
import { tokenRevoke } from './token-revoke.js';
import { packageVersion } from './version.js';
import { webhookAdd } from './webhook-add.js';
import { webhookList } from './webhook-list.js';
import { webhookRedeliver } from './webhook-redeliver.js';
import { webhookRemove } from './webhook-remove.js';
import { webhookTest } from './webhook-test.js';

/** Every command, in the order help lists them. */
export const COMMANDS: readonly Command[] = [
  serve,
  tokenCreate,
  tokenList,
  tokenRevoke,
  webhookAdd,
  webhookList,
  webhookRemove,
  configCommand,
  webhookTest,
  webhookRedeliver,
  migrate,
  backup,
  restore,
  exportCommand,
  importCommand,
];

const HELP = ['-h', '--help'];

const firstSentence = (c: Command) => c.summary.split('. ')[0]!.replace(/\.$/, '');

function usage(commands: readonly Command[], word?: string): string {
  const head = word ? `${word} <command>` : '<command>';
  return `Usage: plant-store ${head} [options]

Commands:
${commands.flatMap((c) => wrap(`  ${c.name.padEnd(16)}${firstSentence(c)}`, 18)).join('\n')}

Run "plant-store ${head} --help" for a command's options and defaults.
${word ? '' : 'Run "plant-store --version" for the version.\n'}`;
}

function findCommand(argv: readonly string[]): [Command | undefined, string[]] {
  for (const c of COMMANDS) {
    const words = c.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) return [c, argv.slice(words.length)];
  }
  return [undefined, [...argv]];
}

/** The commands whose name starts with `word` and has more words ("token" → token create, list, revoke). */
const group = (word: string) => COMMANDS.filter((c) => c.name.startsWith(`${word} `));

/**
 * The plant-store command line: runs the command `argv` names with the
 * outside world `io` and resolves to the exit code (0 done, 1 failed,
 * 2 usage error). It reads and writes nothing else, so tests call it in-process.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === 'help') argv = argv.length > 1 ? [...argv.slice(1), '--help'] : ['--help'];
  const [command, rest] = findCommand(argv);
  if (!command) return noCommand(argv, io);
  try {
    const { values, positionals } = parseCommandArgs(command, rest);
    if (values.help) {
      io.stdout.write(helpText(command));
      return 0;
    }
    if (positionals.length > 0 && !command.positionals) {
      throw new UsageError(
        `unexpected argument "${positionals[0]}"\nRun "plant-store ${command.name} --help" for usage.`,
      );
    }
    return await command.run(io, values, positionals);
  } catch (error) {
    // Refusals that another command line fixes, having changed nothing.
    const refused = error instanceof ManageError && error.kind === 'invalid';
    if (refused || error instanceof UsageError || error instanceof ConfigError || error instanceof BackupOptionError) {
      io.stderr.write(`plant-store ${command.name}: ${error.message}\n`);
      return 2;
    }
    io.stderr.write(`plant-store ${command.name}: ${describe(error)}\n`);
    return 1;
  }
}

/** No command matched: top-level flags, a command group ("token") or a mistake. */
function noCommand(argv: readonly string[], io: CliIo): number {
  const [first, second] = argv;
  if (first === undefined) {
    io.stderr.write(usage(COMMANDS));
    return 2;
  }
  if (HELP.includes(first)) {
    io.stdout.write(usage(COMMANDS));
    return 0;
  }
  if (first === '--version') {
    io.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const members = group(first);
  if (members.length > 0) {
    if (second !== undefined && HELP.includes(second)) {
      io.stdout.write(usage(members, first));
      return 0;
    }
    const what =
      second === undefined ? `"${first}" needs a command` : `unknown command "${argv.join(' ')}"${suggestion(argv)}`;
    io.stderr.write(`plant-store ${first}: ${what}\n\n${usage(members, first)}`);
    return 2;
  }
  io.stderr.write(`plant-store: unknown command "${argv.join(' ')}"${suggestion(argv)}\n\n${usage(COMMANDS)}`);
  return 2;
}

/** ' (did you mean "token create"?)' for a likely typo of a command's name, else ''. */
function suggestion(argv: readonly string[]): string {
  let best: { name: string; distance: number } | undefined;
  for (const c of COMMANDS) {
    const typed = argv.slice(0, c.name.split(' ').length).join(' ');
    const distance = editDistance(typed, c.name);
    if (nearest(typed, [c.name]) !== undefined && (best === undefined || distance < best.distance))
      best = { name: c.name, distance };
  }
  return best ? ` (did you mean "${best.name}"?)` : '';
}

/** An error's message, followed by its causes' ("store unavailable: connect ECONNREFUSED 127.0.0.1:5432"). */
function describe(error: unknown): string {
  // A CliError's message already says all there is; its cause is the raw failure it explains.
  return error instanceof CliError || error instanceof ManageError ? error.message : errorMessages(error);
}
