import { editDistance, nearest } from '../config/nearest.js';
import type { CliIo, Command } from './args.js';
import { packageVersion } from './version.js';

/**
 * Every command, in the order help lists them, each loaded only when it runs: a command imports what it needs
 * (the service for serve, a store for token create), and `--version` or a usage error imports none of it.
 */
const COMMAND_MODULES: readonly { name: string; load: () => Promise<Command> }[] = [
  { name: 'serve', load: async () => (await import('./serve.js')).serve },
  { name: 'token create', load: async () => (await import('./token-create.js')).tokenCreate },
  { name: 'token list', load: async () => (await import('./token-list.js')).tokenList },
  { name: 'token revoke', load: async () => (await import('./token-revoke.js')).tokenRevoke },
  { name: 'webhook add', load: async () => (await import('./webhook-add.js')).webhookAdd },
  { name: 'webhook list', load: async () => (await import('./webhook-list.js')).webhookList },
  { name: 'webhook remove', load: async () => (await import('./webhook-remove.js')).webhookRemove },
  { name: 'config', load: async () => (await import('./config.js')).configCommand },
  { name: 'webhook test', load: async () => (await import('./webhook-test.js')).webhookTest },
  { name: 'webhook redeliver', load: async () => (await import('./webhook-redeliver.js')).webhookRedeliver },
  { name: 'migrate', load: async () => (await import('./migrate.js')).migrate },
  { name: 'backup', load: async () => (await import('./backup.js')).backup },
  { name: 'restore', load: async () => (await import('./restore.js')).restore },
  { name: 'export', load: async () => (await import('./export.js')).exportCommand },
  { name: 'import', load: async () => (await import('./import.js')).importCommand },
];

/** Every command, in the order help lists them (loads them all: for help and the generated reference). */
export const allCommands = (): Promise<Command[]> => Promise.all(COMMAND_MODULES.map((c) => c.load()));

const HELP = ['-h', '--help'];

const firstSentence = (c: Command) => c.summary.split('. ')[0]!.replace(/\.$/, '');

/** The usage text listing `modules` (every command, or a group's), loading them for their summaries. */
async function usage(modules: readonly { load: () => Promise<Command> }[], word?: string): Promise<string> {
  const [commands, { wrap }] = await Promise.all([Promise.all(modules.map((c) => c.load())), import('./args.js')]);
  const head = word ? `${word} <command>` : '<command>';
  return `Usage: plant-store ${head} [options]

Commands:
${commands.flatMap((c) => wrap(`  ${c.name.padEnd(16)}${firstSentence(c)}`, 18)).join('\n')}

Run "plant-store ${head} --help" for a command's options and defaults.
${word ? '' : 'Run "plant-store --version" for the version.\n'}`;
}

function findCommand(argv: readonly string[]): [(typeof COMMAND_MODULES)[number] | undefined, string[]] {
  for (const c of COMMAND_MODULES) {
    const words = c.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) return [c, argv.slice(words.length)];
  }
  return [undefined, [...argv]];
}

/** The commands whose name starts with `word` and has more words ("token" → token create, list, revoke). */
const group = (word: string) => COMMAND_MODULES.filter((c) => c.name.startsWith(`${word} `));

/**
 * The plant-store command line: runs the command `argv` names with the
 * outside world `io` and resolves to the exit code (0 done, 1 failed,
 * 2 usage error). It reads and writes nothing else, so tests call it in-process.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === 'help') argv = argv.length > 1 ? [...argv.slice(1), '--help'] : ['--help'];
  const [found, rest] = findCommand(argv);
  if (!found) return noCommand(argv, io);
  const command = await found.load();
  const { UsageError, helpText, parseCommandArgs } = await import('./args.js');
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
    const refused = error instanceof UsageError || (await isRefusal(error));
    io.stderr.write(`plant-store ${command.name}: ${refused ? (error as Error).message : await describe(error)}\n`);
    return refused ? 2 : 1;
  }
}

/** Refusals that another command line fixes, having changed nothing (exit code 2). */
async function isRefusal(error: unknown): Promise<boolean> {
  // Loaded here, on the failing path: each is already loaded by the commands that can throw it.
  const [{ ConfigError }, { ManageError }, { BackupOptionError }] = await Promise.all([
    import('../config.js'),
    import('../manage/manage-error.js'),
    import('../backup/sqlite-backup.js'),
  ]);
  return (
    (error instanceof ManageError && error.kind === 'invalid') ||
    error instanceof ConfigError ||
    error instanceof BackupOptionError
  );
}

/** No command matched: top-level flags, a command group ("token") or a mistake. */
async function noCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, second] = argv;
  if (first === '--version') {
    io.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (first === undefined) {
    io.stderr.write(await usage(COMMAND_MODULES));
    return 2;
  }
  if (HELP.includes(first)) {
    io.stdout.write(await usage(COMMAND_MODULES));
    return 0;
  }
  const members = group(first);
  if (members.length > 0) {
    const listed = await usage(members, first);
    if (second !== undefined && HELP.includes(second)) {
      io.stdout.write(listed);
      return 0;
    }
    const what =
      second === undefined ? `"${first}" needs a command` : `unknown command "${argv.join(' ')}"${suggestion(argv)}`;
    io.stderr.write(`plant-store ${first}: ${what}\n\n${listed}`);
    return 2;
  }
  io.stderr.write(
    `plant-store: unknown command "${argv.join(' ')}"${suggestion(argv)}\n\n${await usage(COMMAND_MODULES)}`,
  );
  return 2;
}

/** ' (did you mean "token create"?)' for a likely typo of a command's name, else ''. */
function suggestion(argv: readonly string[]): string {
  let best: { name: string; distance: number } | undefined;
  for (const c of COMMAND_MODULES) {
    const typed = argv.slice(0, c.name.split(' ').length).join(' ');
    const distance = editDistance(typed, c.name);
    if (nearest(typed, [c.name]) !== undefined && (best === undefined || distance < best.distance))
      best = { name: c.name, distance };
  }
  return best ? ` (did you mean "${best.name}"?)` : '';
}

/** An error's message, followed by its causes' ("store unavailable: connect ECONNREFUSED 127.0.0.1:5432"). */
async function describe(error: unknown): Promise<string> {
  const [{ CliError }, { ManageError }, { errorMessages }] = await Promise.all([
    import('./store-errors.js'),
    import('../manage/manage-error.js'),
    import('../store/error-causes.js'),
  ]);
  // A CliError's message already says all there is; its cause is the raw failure it explains.
  return error instanceof CliError || error instanceof ManageError ? error.message : errorMessages(error);
}
