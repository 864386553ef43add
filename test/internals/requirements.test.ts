// test/helpers/requirements.ts, run as the suites use it: a test file under
// `node --test`, whose summary must count every test that could not run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const helpers = new URL('../helpers/requirements.js', import.meta.url).href;

const FILE = `
import { after, before, describe, it, needs } from ${JSON.stringify(helpers)};
import { it as nodeIt } from 'node:test';

needs('needs the moon: not up', () => {
  describe('suite', () => {
    before(() => { throw new Error('a hook ran'); });
    after(() => { throw new Error('a hook ran'); });
    it('a', () => { throw new Error('a test ran'); });
    describe('nested', () => {
      it('b', { timeout: 1000 }, () => { throw new Error('a test ran'); });
    });
    if (process.env.DIRECT) nodeIt('declared with node:test', () => {});
  });
});
needs(undefined, () => it('c, which needs nothing', () => {}));
`;

/** Runs FILE under node --test; the summary counters and the whole output. */
function run(file: string, env: Record<string, string>): { counts: Record<string, number>; out: string } {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  delete childEnv.NODE_TEST_CONTEXT; // else the child reports to this runner instead of printing
  if (!('CI' in env)) delete childEnv.CI;
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { env: childEnv, encoding: 'utf8' });
  const counts = Object.fromEntries([...r.stdout.matchAll(/^# (\w+) (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
  return { counts, out: r.stdout + r.stderr };
}

describe('tests that need something missing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-requirements-'));
  const file = join(dir, 'needs.test.mjs');
  writeFileSync(file, FILE);
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are counted and reported as skipped with the reason; their hooks do not run', () => {
    const { counts, out } = run(file, {});
    assert.deepEqual([counts.tests, counts.pass, counts.skipped, counts.fail], [3, 1, 2, 0], out);
    assert.equal(out.match(/# SKIP needs the moon: not up/g)?.length, 2, out);
    assert.doesNotMatch(out, /a hook ran|a test ran/);
  });

  it('fail with the reason under CI=true', () => {
    const { counts, out } = run(file, { CI: 'true' });
    assert.deepEqual([counts.tests, counts.pass, counts.skipped, counts.fail], [3, 1, 0, 2], out);
    assert.equal(out.match(/CI=true, so this may not be skipped: needs the moon: not up/g)?.length, 2, out);
    assert.doesNotMatch(out, /a hook ran|a test ran/);
  });

  it('fail, saying why, when declared with node:test itself', () => {
    const { counts, out } = run(file, { DIRECT: '1' });
    assert.deepEqual([counts.tests, counts.skipped, counts.fail], [4, 2, 1], out);
    assert.match(out, /declared with node:test's own it\/test, so it cannot be skipped/);
  });
});
