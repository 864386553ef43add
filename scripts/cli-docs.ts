// docs/reference/cli.md, written from the commands themselves (their summary,
// output and --help): `npm run docs:config` writes it with the configuration
// page, and a test fails when the page and the commands differ.
import { helpText } from '../src/cli/args.js';
import { allCommands } from '../src/cli/main.js';

export const CLI_PAGE = 'docs/reference/cli.md';

const COMMANDS = await allCommands();

const anchor = (name: string) => `plant-store-${name.replace(/ /g, '-')}`;

/** "a", "a and b", "a, b and c". */
const list = (items: string[]) =>
  items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`;

/** The whole page, as the commands say it. */
export function cliPage(): string {
  const withoutJson = COMMANDS.filter((c) => c.flags?.json === undefined).map((c) => `\`${c.name}\``);
  return [
    '# Command-line reference',
    '',
    '<!-- Written by `npm run docs:config` from src/cli/. Do not edit by hand. -->',
    '',
    '`plant-store` is the executable of this package: installed from a packed tarball',
    '(`npm pack`, then `npm install -g ./plant-store-<version>.tgz`), it is on the PATH; inside',
    'the repository, after `npm run build`, `node dist/src/cli/bin.js` is the same program.',
    '',
    '| Command | What it does |',
    '|---|---|',
    ...COMMANDS.map((c) => `| [\`${c.name}\`](#${anchor(c.name)}) | ${c.summary.split('. ')[0]!.replace(/\.$/, '')} |`),
    '',
    '`plant-store --help` lists the commands, `plant-store <command> --help` shows one, and',
    '`plant-store --version` prints the version.',
    '',
    '## Exit codes',
    '',
    '| Code | Meaning |',
    '|---|---|',
    '| 0 | done |',
    '| 1 | failed: the store could not be reached or used, or nothing matched (`token revoke`, `webhook remove`) |',
    '| 2 | the command line or a setting is wrong, or lacks a flag the situation needs (`restore --force`); nothing was changed |',
    '| 130, 143 | `serve` only: a second SIGINT or SIGTERM forced the exit before in-flight requests finished |',
    '',
    'Every error is one line on stderr that starts with `plant-store <command>:` (or `plant-store:`',
    'when no command matched). A mistyped command or option is answered with the nearest one; a',
    'one-letter option with the flag it usually stands for (`-p` → `--port`, `-d` → `--db`, `-o` →',
    '`--owner`) when the command has it.',
    '',
    '## Output for scripts',
    '',
    'A secret (a token, a webhook signing secret) is printed alone on stdout, so that',
    '`TOKEN=$(plant-store token create --owner me)` works; what a person reads goes to stderr.',
    `Every command but ${list(withoutJson)} takes \`--json\`: it then prints what it reports as one`,
    'JSON object on one line instead, with ids and owners in fields; the list commands print one',
    "object per line. Each command's **Output** below says where.",
    '',
    'Settings (`--db` and the others) can also come from `PLANTS_` environment variables (for',
    "tracing, OpenTelemetry's `OTEL_` ones) and",
    'from `--config FILE`: see [the configuration reference](configuration.md).',
    '',
    ...COMMANDS.flatMap((c) => [
      `## plant-store ${c.name}`,
      '',
      `**Output.** ${c.output}`,
      '',
      '```text',
      helpText(c).trimEnd(),
      '```',
      '',
    ]),
  ].join('\n');
}
