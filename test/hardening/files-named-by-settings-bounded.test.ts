// Files named by settings (--config, --db-file, --redis-url-file, the webhook
// key file, the TLS files of a PostgreSQL URL): a regular file, or a link to
// one, of at most 1 MiB; anything else is refused at once with exit 2, naming
// the setting and the reason. And the configuration file's own rules: only
// settings as keys (inherited names too), a key once, a BOM accepted, a
// parse error by line and column without the file's text.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import {
  ConfigError,
  OPERATOR_FILE_MAX_BYTES,
  loadConfig,
  parseConfigFile,
  readOperatorFile,
} from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-operator-files-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const T = { timeout: 20_000 };

const path = (name: string) => join(dir, name);
const file = (name: string, content: string | Buffer) => {
  writeFileSync(path(name), content);
  return path(name);
};

// What a file named by a setting must not be, each with the reason the refusal gives.
const fifo = path('fifo.json');
execFileSync('mkfifo', [fifo]);
const zero = path('zero.json');
symlinkSync('/dev/zero', zero);
const big = file('big.json', Buffer.alloc(2 * 1024 * 1024, 0x20));
const folder = path('folder.json');
mkdirSync(folder);
const WRONG: [string, string, RegExp][] = [
  ['a link to /dev/zero', zero, /is a character device, not a regular file$/],
  ['a FIFO', fifo, /is a FIFO, not a regular file$/],
  ['a 2 MiB file', big, /is larger than 1 MiB, the most a file named by a setting may hold$/],
  ['a directory', folder, /is a directory, not a regular file$/],
];

/** Runs the CLI and checks it was refused with exit 2 within a second, with one line naming `setting`. */
async function refusedFast(
  args: string[],
  setting: string,
  reason: RegExp,
  env: Record<string, string> = {},
): Promise<void> {
  const started = performance.now();
  const r = await runCli(args, env);
  const ms = performance.now() - started;
  assert.equal(r.code, 2, r.stderr);
  assert.ok(ms < 1000, `refused after ${ms.toFixed(0)} ms`);
  const line = r.stderr.trimEnd();
  assert.ok(!line.includes('\n'), line);
  assert.ok(line.includes(`${setting}: `), line);
  assert.match(line, reason);
}

describe('files named by settings are bounded', () => {
  for (const [what, target, reason] of WRONG) {
    it(`--config refuses ${what}`, T, () => refusedFast(['migrate', '--config', target], '--config', reason));
    it(`PLANTS_CONFIG refuses ${what}`, T, () =>
      refusedFast(['migrate'], 'PLANTS_CONFIG', reason, { PLANTS_CONFIG: target }),
    );
    it(`--db-file refuses ${what}`, T, () => refusedFast(['migrate', '--db-file', target], '--db-file', reason));
  }

  it(
    '--redis-url-file, the webhook key file and a TLS file of the PostgreSQL URL are held to the same bounds',
    T,
    async () => {
      await refusedFast(
        ['serve', '--rate-limit', '5/1s', '--redis-url-file', fifo, '--db', path('a.db')],
        '--redis-url-file',
        /is a FIFO/,
      );
      assert.equal((await runCli(['migrate', '--db', path('b.db')])).code, 0);
      await refusedFast(
        [
          'webhook',
          'add',
          '--db',
          path('b.db'),
          '--owner',
          'o',
          '--url',
          'https://hooks.invalid/x',
          '--webhook-key-file',
          zero,
        ],
        '--webhook-key-file',
        /is a character device/,
      );
      await refusedFast(['serve', '--db', path('c.db'), '--webhook-key-file', fifo], '--webhook-key-file', /is a FIFO/);
      await refusedFast(
        ['migrate', '--db', `postgres://app@127.0.0.1:1/plants?sslmode=verify-full&sslrootcert=${fifo}`],
        'sslrootcert in --db',
        /is a FIFO/,
      );
    },
  );

  it('a link to a regular file is read; 1 MiB is the most, and one byte more is refused', () => {
    const target = file('target.txt', 'postgres://h/d\n');
    const link = path('link.txt');
    symlinkSync(target, link);
    assert.equal(readOperatorFile(link, '--db-file'), 'postgres://h/d\n');
    const most = file('most.txt', Buffer.alloc(OPERATOR_FILE_MAX_BYTES, 0x61));
    assert.equal(readOperatorFile(most, '--db-file').length, OPERATOR_FILE_MAX_BYTES);
    const over = file('over.txt', Buffer.alloc(OPERATOR_FILE_MAX_BYTES + 1, 0x61));
    assert.throws(() => readOperatorFile(over, '--db-file'), { name: 'ConfigError', message: /larger than 1 MiB/ });
    assert.equal(readOperatorFile(path('none'), '--webhook-key-file', { missingOk: true }), undefined);
    assert.throws(
      () => readOperatorFile(path('none'), '--db-file'),
      /^ConfigError: --db-file: cannot read .* \(no such file\)$/,
    );
  });
});

describe('the configuration file', () => {
  const parse = (name: string, text: string) => parseConfigFile(name, text);
  const problem = (name: string, text: string): string => {
    try {
      parse(name, text);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.message;
    }
    assert.fail(`${name} was accepted: ${text}`);
  };

  for (const key of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    it(`refuses the inherited name ${key} as a key, in JSON and TOML`, () => {
      assert.match(problem('c.json', `{"${key}": {"port": 1}}`), new RegExp(`^c\\.json: unknown setting "${key}"`));
      const toml = problem('c.toml', `"${key}" = 1`);
      assert.ok(
        toml.startsWith(`c.toml: unknown setting "${key}"`) || toml.startsWith('c.toml is not valid TOML: '),
        toml,
      );
    });
  }

  it('accepts a UTF-8 byte order mark, in JSON and TOML, read from the file', T, async () => {
    const json = file('bom.json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"port": 8081}')]));
    const toml = file('bom.toml', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('port = 8082\n')]));
    for (const [name, port] of [
      [json, 8081],
      [toml, 8082],
    ] as const) {
      const config = loadConfig({}, {}, {}, ['port'], parseConfigFile(name, readOperatorFile(name, '--config')));
      assert.equal(config.port, port);
    }
    const r = await runCli(['migrate', '--db', path('bom.db'), '--config', json]);
    assert.equal(r.code, 0, r.stderr);
  });

  it('refuses a key given twice, with the same value or another', () => {
    assert.equal(
      problem('d.json', '{"port": 1,\n  "port": 2}'),
      'd.json is not valid JSON: "port" is given twice (line 2, column 3)',
    );
    assert.match(problem('d.json', '{"port": 1, "port": 1}'), /"port" is given twice \(line 1, column 13\)$/);
    assert.match(problem('d.toml', 'port = 1\nport = 2\n'), /^d\.toml is not valid TOML: .* at line 2, column \d+$/);
  });

  it('names the line and column of a parse error and never repeats the text', () => {
    const secret = 'hunter2-secret';
    const json = problem('e.json', `{\n  "db": "postgres://app:${secret}@db/plants"\n  "port": 1\n}`);
    assert.equal(json, 'e.json is not valid JSON: comma expected at line 3, column 3');
    const start = problem('e.json', `${secret} {}`);
    assert.match(start, /^e\.json is not valid JSON: .* at line 1, column 1$/);
    const toml = problem('e.toml', `port = 1\ndb = "postgres://app:${secret}@db/plants\n`);
    assert.match(toml, /^e\.toml is not valid TOML: .* at line 2, column \d+$/);
    for (const message of [json, start, toml]) {
      assert.ok(!message.includes(secret) && !message.includes('hunter'), message);
      assert.ok(!message.includes('\n'), message);
    }
  });
});
