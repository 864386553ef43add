// The configuration reference's table is what users read; it must match the
// settings the code accepts (flag, environment variable, default).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from './helpers/requirements.js';
import { SETTINGS } from '../src/config.js';

const readme = readFileSync(new URL('../../docs/reference/configuration.md', import.meta.url), 'utf8');

it('the configuration reference lists every setting with its environment variable and default', () => {
  const rows = readme.split('\n').filter((line) => line.startsWith('| `--'));
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const row = rows.find((r) => r.startsWith(`| \`--${name}\` |`));
    assert.ok(row, `no README row for --${name}`);
    assert.ok(row.includes(`| \`${setting.env}\` |`), `README row for --${name} should name ${setting.env}: ${row}`);
    // A setting without a default has an empty cell.
    const cell = setting.default === '' ? '| |' : `| \`${setting.default}\` |`;
    assert.ok(row.includes(cell), `README row for --${name} should give the default ${setting.default}: ${row}`);
  }
  assert.equal(rows.length, Object.keys(SETTINGS).length, 'README lists settings the code does not have');
});
