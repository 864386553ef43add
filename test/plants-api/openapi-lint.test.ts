// The served document passes Redocly's recommended rules with no error, as
// generators and API tools that lint on import would see it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from '../helpers/requirements.js';
import { promisify } from 'node:util';
import { useApp } from '../helpers/app.js';
import { describeOnStore } from '../helpers/stores.js';

const REDOCLY = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>;
}

describeOnStore('sqlite', 'OpenAPI document under redocly lint', (fx) => {
  const h = useApp(fx);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-lint-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('has no error under the recommended rules', { timeout: 60_000 }, async () => {
    const res = await h.request({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const file = join(dir, 'openapi.json');
    writeFileSync(file, res.body);
    const { stdout } = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', '--format=json', file], {
      cwd: dir,
      // Redocly reports usage and looks for updates over the network unless told not to.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    }).catch((error: { stdout?: string; stderr?: string }) => {
      // Exit code 1 means errors were found: the report is still on stdout.
      if (error.stdout) return { stdout: error.stdout };
      throw error;
    });
    const report = JSON.parse(stdout) as LintReport;
    const errors = report.problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    assert.deepEqual(errors, []);
    assert.equal(report.totals.errors, 0);
    // The two health probes have no 4xx answer to document (operation-4xx-response warns about that).
    const warnings = report.problems.filter((p) => p.severity === 'warn').map((p) => p.ruleId);
    assert.deepEqual(warnings, ['operation-4xx-response', 'operation-4xx-response']);
  });
});
