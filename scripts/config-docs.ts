// docs/reference/configuration.md, written from the settings table in
// src/config/settings.ts: `npm run docs:config` writes it, and a test fails when the
// page and the table differ.
import { SETTINGS, SETTING_GROUPS, isSwitch, settingSpec, type SettingGroup, type SettingName } from '../src/config.js';

export const CONFIG_PAGE = 'docs/reference/configuration.md';

const TOPICS: Record<SettingGroup, string> = {
  network: 'Network',
  storage: 'Storage',
  auth: 'Authentication',
  webhooks: 'Webhooks',
  events: 'Live events',
  limits: 'Limits',
  observability: 'Observability',
  tracing: 'Tracing',
};

const code = (text: string) => (text === '' ? '' : `\`${text.replace(/\|/g, '\\|')}\``);
const cell = (text: string) => text.replace(/\|/g, '\\|');

function row(name: SettingName): string {
  const s = settingSpec(name);
  const env = s.fallbackEnv ? `${code(s.env)}, or ${code(s.fallbackEnv)}` : code(s.env);
  const value = isSwitch(name) ? '(a switch)' : code(s.arg);
  return `| ${code(`--${name}`)} | ${env} | ${code(s.default)} | ${value} | ${cell(s.help)} |`;
}

/** The whole page, as the settings table says it. */
export function configurationPage(): string {
  const names = Object.keys(SETTINGS) as SettingName[];
  const sections = SETTING_GROUPS.flatMap((group) => [
    `## ${TOPICS[group]}`,
    '',
    '| Flag | Environment variable | Default | Value | What it does |',
    '|---|---|---|---|---|',
    ...names.filter((n) => SETTINGS[n].group === group).map(row),
    '',
  ]);
  return [
    '# Configuration reference',
    '',
    '<!-- Written by `npm run docs:config` from the settings table in src/config.ts. Do not edit by hand. -->',
    '',
    'Every setting of `plant-store serve` (and of the other commands, which read the few they use,',
    'such as `--db`) can be given on the command line, in the environment or in a configuration',
    'file, or left at its default.',
    '',
    '## Where a setting comes from',
    '',
    'The first of these that is set wins:',
    '',
    '1. the flag on the command line: `--port 8081`;',
    '2. its `PLANTS_` environment variable: `PLANTS_PORT=8081` (the tracing settings read',
    "   OpenTelemetry's own variables instead, such as `OTEL_EXPORTER_OTLP_ENDPOINT`, so that a",
    "   collector's or a platform's settings apply unchanged);",
    '3. for `--db` and `--port` only, the older `DATABASE_URL` and `PORT`, read when `PLANTS_DB` and',
    '   `PLANTS_PORT` are unset (so `PLANTS_DB` wins over `DATABASE_URL`, `PLANTS_PORT` over `PORT`);',
    '4. the configuration file named by `--config FILE` or `PLANTS_CONFIG`;',
    '5. the default below.',
    '',
    '`plant-store config` (with the options of `serve`, and `--json` for one JSON object) prints',
    'each setting in force with its value and where it came from, URL passwords as `***`.',
    '',
    '`HOST` and `LOG_LEVEL` are not read: other tools set them. Use `PLANTS_HOST` and `PLANTS_LOG_LEVEL`.',
    '',
    'Every value is checked the same way wherever it comes from, and a bad one stops the command',
    'with a message naming the flag, the variable or the file it came from (exit code 2).',
    '',
    '## The configuration file',
    '',
    'A JSON (`.json`) or TOML (`.toml`) file with one key per setting, named as the flag without',
    'its dashes. Numbers and booleans may be written as such; a list (`cors-origin`) may be an array.',
    'A key that names no setting is refused, and so is a key given twice. Each command reads only',
    'the settings it uses, so one file can serve `serve`, `migrate` and `token create` alike. The',
    'file is UTF-8, with or without a byte order mark; a syntax error is reported by line and column,',
    'without quoting the file.',
    '',
    '```toml',
    '# plants.toml: plant-store serve --config plants.toml',
    'host = "0.0.0.0"',
    'port = 8080',
    'db = "/var/lib/plant-store/plants.db"',
    'rate-limit = "100/1s"',
    'cors-origin = ["https://app.example.com", "http://localhost:5173"]',
    'access-log = true',
    '```',
    '',
    '```json',
    '{ "host": "0.0.0.0", "port": 8080, "db": "/var/lib/plant-store/plants.db", "access-log": true }',
    '```',
    '',
    'A switch (a setting shown as "(a switch)") is on with the bare flag (`--access-log`); in the',
    'environment it takes `true`, `false`, `1` or `0`, in a file `true` or `false`. A list takes',
    'its items separated by commas. A setting with no default is unset when its variable is empty.',
    '',
    '## Files named by settings',
    '',
    'The configuration file, `--db-file`, `--redis-url-file`, the webhook key file and the',
    '`sslcert`, `sslkey` and `sslrootcert` files of a PostgreSQL URL must each be a regular file (a',
    'link to one is followed) of at most 1 MiB. Anything else, such as a FIFO, a device, a directory or',
    'a larger file, stops the command at once with exit code 2 and a message naming the setting and',
    'the reason: `--config: plants.json is a FIFO, not a regular file`.',
    '',
    ...sections,
  ].join('\n');
}
