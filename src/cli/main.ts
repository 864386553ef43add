#!/usr/bin/env node
import { ConfigError } from '../config.js';
import { UsageError, helpText, parseCommandArgs, type Command, type CommandContext } from './args.js';
import { backup } from './backup.js';
import { exportCommand } from './export.js';
import { importCommand } from './import.js';
import { migrate } from './migrate.js';
import { restore } from './restore.js';
import { serve } from './serve.js';
import { tokenCreate } from './token-create.js';
import { tokenList } from './token-list.js';
import { tokenRevoke } from './token-revoke.js';

const COMMANDS: Command[] = [
  serve,
  tokenCreate,
  tokenList,
  tokenRevoke,
  migrate,
  backup,
  restore,
  exportCommand,
  importCommand,
];

const USAGE = `Usage: plant-store <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(14)}${c.summary.split('. ')[0]!.replace(/\.$/, '')}`).join('\n')}

Run "plant-store <command> --help" for a command's options and defaults.
`;

function findCommand(argv: string[]): [Command | undefined, string[]] {
  for (const c of COMMANDS) {
    const words = c.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) return [c, argv.slice(words.length)];
  }
  return [undefined, argv];
}

export async function main(ctx: CommandContext): Promise<number> {
  const [command, rest] = findCommand(ctx.argv);
  if (!command) {
    if (ctx.argv.length === 0) {
      ctx.stderr.write(USAGE);
      return 2;
    }
    if (['-h', '--help', 'help'].includes(ctx.argv[0]!)) {
      ctx.stdout.write(USAGE);
      return 0;
    }
    ctx.stderr.write(`plant-store: unknown command "${ctx.argv.join(' ')}"\n\n${USAGE}`);
    return 2;
  }
  try {
    const { values, positionals } = parseCommandArgs(command, rest);
    if (values.help) {
      ctx.stdout.write(helpText(command));
      return 0;
    }
    if (positionals.length > 0 && command.name !== 'token revoke') {
      throw new UsageError(
        `unexpected argument "${positionals[0]}"\nRun "plant-store ${command.name} --help" for usage.`,
      );
    }
    return await command.run(ctx, values, positionals);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      ctx.stderr.write(`plant-store ${command.name}: ${error.message}\n`);
      return 2;
    }
    ctx.stderr.write(`plant-store ${command.name}: ${describe(error)}\n`);
    return 1;
  }
}

/** An error's message, followed by its cause's ("store unavailable: connect ECONNREFUSED 127.0.0.1:5432"). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause && !error.message.includes(cause) ? `${error.message}: ${cause}` : error.message;
}

// process.env is read here and nowhere else: everything below gets it passed in.
const code = await main({
  argv: process.argv.slice(2),
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: Boolean(process.stdout.isTTY),
});
process.exit(code);
