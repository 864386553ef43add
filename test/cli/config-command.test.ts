// plant-store config: the settings serve would run with, each with its value
// and where it came from, as a table or one JSON object; URL passwords as ***;
// refused with serve's own message where serve refuses.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { SETTINGS } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-config-command-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const T = { timeout: 20_000 };

type Shown = Record<string, { value: unknown; source: string }>;

async function configJson(args: string[], env: Record<string, string> = {}): Promise<Shown> {
  const r = await runCli(['config', '--json', ...args], env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 1, 'one JSON object on one line');
  return JSON.parse(lines[0]!) as Shown;
}

describe('plant-store config', () => {
  it('shows every setting of a default start, keyed by flag name, each from its default', T, async () => {
    const shown = await configJson([]);
    assert.deepEqual(Object.keys(shown), Object.keys(SETTINGS));
    assert.deepEqual(shown.port, { value: 8080, source: 'default' });
    assert.deepEqual(shown.host, { value: '127.0.0.1', source: 'default' });
    assert.deepEqual(shown['access-log'], { value: false, source: 'default' });
    assert.deepEqual(shown['rate-limit'], { value: 'off', source: 'default' });
    // Failed authentications are limited only along with --rate-limit, or when set.
    assert.deepEqual(shown['auth-fail-limit'], { value: 'off', source: 'default' });
    assert.deepEqual(shown['jwks-url'], { value: null, source: 'default' });
    for (const [name, { source }] of Object.entries(shown)) assert.equal(source, 'default', name);
  });

  it('names the source of each value: flag over env over file over default', T, async () => {
    const file = join(dir, 'plants.toml');
    writeFileSync(file, 'port = 7000\nlog-level = "warn"\nbody-limit = 2048\nrate-limit = "5/1s"\n');
    const shown = await configJson(['--config', file, '--port', '8081', '--auth-fail-limit', '3/1m'], {
      PLANTS_LOG_LEVEL: 'DEBUG',
      PORT: '9000',
      PLANTS_SLOW_REQUEST_MS: '50',
    });
    assert.deepEqual(shown.port, { value: 8081, source: 'flag' });
    assert.deepEqual(shown['log-level'], { value: 'debug', source: 'env' });
    assert.deepEqual(shown['slow-request-ms'], { value: 50, source: 'env' });
    assert.deepEqual(shown['body-limit'], { value: 2048, source: 'file' });
    assert.deepEqual(shown['rate-limit'], { value: '5/1s', source: 'file' });
    assert.deepEqual(shown['auth-fail-limit'], { value: '3/1m', source: 'flag' });
    assert.deepEqual((await configJson([], { PORT: '9000' })).port, { value: 9000, source: 'env' });
    assert.deepEqual((await configJson(['--workers', 'auto'])).workers!.source, 'flag');
  });

  it('prints a table: a line per setting with its value and source, the variable or file named', T, async () => {
    const r = await runCli(['config', '--port', '8081'], { PLANTS_LOG_LEVEL: 'warn' });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^SETTING +VALUE +SOURCE$/);
    assert.equal(lines.length, 1 + Object.keys(SETTINGS).length);
    assert.ok(lines.some((l) => /^port +8081 +flag$/.test(l)));
    assert.ok(lines.some((l) => /^log-level +warn +env PLANTS_LOG_LEVEL$/.test(l)));
    assert.ok(lines.some((l) => /^host +127\.0\.0\.1 +default$/.test(l)));
  });

  it('shows URL passwords as ***, in the table and in JSON, from a flag, the environment or a file', T, async () => {
    const secret = 'hunter2-s3cret';
    const url = `postgres://app:${secret}@db.example:5432/plants?sslmode=require`;
    const urlFile = join(dir, 'db-url');
    writeFileSync(urlFile, `${url}\n`);
    const runs = [
      await runCli(['config', '--json', '--db', url]),
      await runCli(['config', '--db', url]),
      await runCli(['config', '--json'], { DATABASE_URL: `postgres://db.example/plants?password=${secret}` }),
      await runCli(['config', '--json', '--db-file', urlFile]),
      await runCli(['config'], { PLANTS_REDIS_URL: `redis://:${secret}@cache:6379`, PLANTS_RATE_LIMIT: '5/1s' }),
    ];
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), r.stdout);
      assert.match(r.stdout, /\*\*\*/);
    }
    const json = JSON.parse(runs[0]!.stdout) as Shown;
    assert.deepEqual(json.db, { value: 'postgres://***@db.example:5432/plants?sslmode=require', source: 'flag' });
    // A URL read from --db-file comes from where --db-file was given.
    const fromFile = JSON.parse(runs[3]!.stdout) as Shown;
    assert.equal(fromFile.db!.source, 'flag');
    assert.equal(fromFile['db-file']!.value, urlFile);
    assert.match(runs[4]!.stdout, /^redis +redis:\/\/\*\*\*@cache:6379 +env PLANTS_REDIS_URL$/m);
  });

  it('refuses what serve refuses, with exit 2 and the same message', T, async () => {
    const fifo = join(dir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    const mistakes: [string[], Record<string, string>][] = [
      [[], { PLANTS_PORT: 'abc' }],
      [['--port', '70000'], {}],
      [['--list-default-limit', '5000'], {}],
      [['--db', 'mysql://u:pw@h/d'], {}],
      [['--redis', 'redis://h'], {}],
      [['--jwks-url', 'https://issuer.example/jwks'], {}],
      [['--config', fifo], {}],
      [['--webhook-key-file', fifo], {}],
      [['--prot', '1'], {}],
    ];
    for (const [args, env] of mistakes) {
      const config = await runCli(['config', ...args], env);
      const serve = await runCli(['serve', ...args], env);
      assert.equal(serve.code, 2, `serve ${args.join(' ')}: ${serve.stderr}`);
      assert.equal(config.code, 2, `config ${args.join(' ')}: ${config.stderr}`);
      assert.equal(config.stdout, '');
      const message = (r: { stderr: string }, command: string) => r.stderr.replace(`plant-store ${command}: `, '');
      assert.equal(
        message(config, 'config').replaceAll('"plant-store config --help"', '"plant-store serve --help"'),
        message(serve, 'serve'),
      );
    }
  });

  it('takes every option serve takes, and --json', T, async () => {
    const help = (await runCli(['config', '--help'])).stdout;
    for (const name of Object.keys(SETTINGS)) assert.ok(help.includes(`  --${name}`), name);
    assert.match(help, /^ {2}--json /m);
    assert.match(help, /^ {2}--config FILE /m);
  });
});
