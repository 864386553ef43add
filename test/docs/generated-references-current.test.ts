// docs/reference/configuration.md and cli.md are written from the settings
// table and the commands: each must be what `npm run docs:config` writes today.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from '../helpers/requirements.js';
import { SETTINGS } from '../../src/config.js';
import { CLI_PAGE, cliPage } from '../../scripts/cli-docs.js';
import { CONFIG_PAGE, configurationPage } from '../../scripts/config-docs.js';

const read = (page: string) => readFileSync(new URL(`../../../${page}`, import.meta.url), 'utf8');
const page = read(CONFIG_PAGE);

it(`${CONFIG_PAGE} is up to date with src/config.ts`, { timeout: 5_000 }, () => {
  assert.ok(page === configurationPage(), `${CONFIG_PAGE} is out of date: run npm run docs:config`);
});

it(`${CLI_PAGE} is up to date with src/cli/`, { timeout: 5_000 }, () => {
  assert.ok(read(CLI_PAGE) === cliPage(), `${CLI_PAGE} is out of date: run npm run docs:config`);
});

it('lists every setting once, with its variable and default', { timeout: 5_000 }, () => {
  for (const [name, s] of Object.entries(SETTINGS)) {
    const rows = page.split('\n').filter((l) => l.startsWith(`| \`--${name}\` |`));
    assert.equal(rows.length, 1, `--${name}`);
    assert.ok(rows[0]!.includes(`\`${s.env}\``), rows[0]);
    if (s.default !== '') assert.ok(rows[0]!.includes(`| \`${s.default}\` |`), rows[0]);
  }
});
