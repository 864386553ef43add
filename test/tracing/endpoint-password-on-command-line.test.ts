// An OTLP endpoint given as a flag with a password in it (the exporter sends
// a URL's user and password as Basic credentials): serve warns at start, as
// for --db, naming where to give it instead, and never prints the password;
// config shows it as ***. The same URL from the environment is not warned about.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { argvPasswordWarning, loadConfig } from '../../src/config.js';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess } from '../helpers/cli.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { migrateWithCli, serveArgs, startServer, stopGracefully } from '../helpers/server.js';

const PASSWORD = 'Otlp5ecretPw';
const withPassword = (base: string) => base.replace('://', `://collector:${PASSWORD}@`);
const dir = mkdtempSync(join(tmpdir(), 'plant-store-otlp-argv-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('an OTLP endpoint with a password on the command line', () => {
  it('is noted for the start-up warning from a flag, not from the environment', () => {
    const url = withPassword('https://collector.example:4318');
    assert.deepEqual(loadConfig({ 'otel-exporter-otlp-endpoint': url }, {}).passwordsInArgv, [
      '--otel-exporter-otlp-endpoint',
    ]);
    assert.deepEqual(loadConfig({ 'otel-exporter-otlp-traces-endpoint': `${url}/v1/traces` }, {}).passwordsInArgv, [
      '--otel-exporter-otlp-traces-endpoint',
    ]);
    assert.equal(loadConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: url }).passwordsInArgv, undefined);
    assert.equal(
      loadConfig({ 'otel-exporter-otlp-endpoint': 'https://collector.example:4318' }, {}).passwordsInArgv,
      undefined,
    );
    const warning = argvPasswordWarning(['--otel-exporter-otlp-endpoint']);
    assert.match(
      warning,
      /^--otel-exporter-otlp-endpoint carries a password on the command line, where every user of this machine can read it \(ps\); give it in OTEL_EXPORTER_OTLP_ENDPOINT, or the credentials in OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });

  it('config shows its password as ***', async () => {
    const res = await runCliInProcess([
      'config',
      '--json',
      '--otel-exporter-otlp-endpoint',
      withPassword('https://collector.example:4318'),
      '--otel-exporter-otlp-traces-endpoint',
      withPassword('https://traces.example/otlp/v1/traces'),
    ]);
    assert.equal(res.code, 0, res.stderr);
    const shown = JSON.parse(res.stdout) as Record<string, { value: unknown; source: string }>;
    assert.deepEqual(shown['otel-exporter-otlp-endpoint'], {
      value: 'https://***@collector.example:4318',
      source: 'flag',
    });
    assert.deepEqual(shown['otel-exporter-otlp-traces-endpoint'], {
      value: 'https://***@traces.example/otlp/v1/traces',
      source: 'flag',
    });
    assert.ok(!res.stdout.includes(PASSWORD) && !res.stderr.includes(PASSWORD), res.stdout);
  });

  it('serve warns at start, without the password', async () => {
    const otlp = await new OtlpReceiver().start();
    const db = join(dir, 'plants.db');
    await migrateWithCli(db);
    const server = await startServer(serveArgs(db, '--otel-exporter-otlp-endpoint', withPassword(otlp.endpoint)));
    try {
      await server.waitForOutput((out) => out.includes('carries a password'), 10_000);
      const line = server.logLines().find((l) => String(l.msg).includes('carries a password'));
      assert.equal(line?.level, 40);
      assert.match(String(line?.msg), /^--otel-exporter-otlp-endpoint carries a password on the command line/);
    } finally {
      await stopGracefully(server);
      await otlp.stop();
    }
    assert.ok(!server.stdout.includes(PASSWORD) && !server.stderr.includes(PASSWORD), server.stdout);
  });
});
