// Database and Redis passwords: never printed, even from a URL too malformed
// to parse; readable from a file (--db-file, --redis-url-file) so that they
// stay out of the process list; and a password left in argv is warned about
// at start.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, argvPasswordWarning, loadConfig } from '../../src/config.js';
import { runCliInProcess } from '../helpers/cli.js';
import { serveArgs, startServer, stopGracefully } from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';
import { after, before, describe, it } from '../helpers/requirements.js';

const PASSWORD = 'Pa55/w@rd#x y';

/** The ConfigError message loadConfig throws for these flags and environment. */
function refused(flags: Record<string, string>, env: Record<string, string> = {}): string {
  try {
    loadConfig(flags, env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail(`accepted ${JSON.stringify(flags)}`);
}

/** Whether any 4 characters in a row of the password appear in `text`. */
function leaks(text: string, password = PASSWORD): boolean {
  for (let i = 0; i + 4 <= password.length; i++) if (text.includes(password.slice(i, i + 4))) return true;
  return false;
}

describe('--db URLs that fail to parse', () => {
  const MALFORMED = [
    `postgres://user:${PASSWORD}@host:5432/db`,
    `postgres://user:${PASSWORD}@host:99999/db`,
    `postgresql://user:${PASSWORD}`,
    `postgres:/user:${PASSWORD}@host/db`,
    `postgres//user:${PASSWORD}@host/db`,
    `postgres:user:${PASSWORD}@host/db`,
    `mysql://user:${PASSWORD}@host/db`,
    `postgres://user:Secr3tNoAt/host/db x`,
  ];
  for (const url of MALFORMED) {
    it(`never print the password of ${JSON.stringify(url.replace(PASSWORD, 'PASSWORD'))}`, { timeout: 5000 }, () => {
      for (const message of [refused({ db: url }), refused({}, { DATABASE_URL: url })]) {
        assert.match(message, /(--db|DATABASE_URL) (is not a valid|looks like)/);
        assert.ok(!leaks(message) && !leaks(message, 'Secr3tNoAt'), message);
      }
    });
  }
});

describe('--db with an sslmode pg does not know', () => {
  it(
    'is a bad setting (exit 2) before any connection, and the password is not printed',
    { timeout: 10_000 },
    async () => {
      const db = `postgresql://app:${encodeURIComponent(PASSWORD)}@127.0.0.1:1/plants?sslmode=bogus`;
      for (const args of [
        ['token', 'list', '--db', db],
        ['migrate', '--db', db],
        ['serve', '--port', '0', '--db', db],
      ]) {
        const r = await runCliInProcess(args);
        assert.equal(r.code, 2, `${args[0]}: ${r.stderr}`);
        assert.match(r.stderr, /: --db has sslmode="bogus", which is not an SSL mode; use one of disable, /);
        assert.ok(!leaks(r.stderr) && !leaks(r.stdout), r.stderr);
      }
    },
  );
});

describe('URLs read from files', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-urlfile-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };

  it('take --db from --db-file or PLANTS_DB_FILE, trimmed, with no warning', { timeout: 5000 }, () => {
    const path = file('db-url', 'postgres://app:s3cret@db.example:5432/plants\n');
    for (const config of [loadConfig({ 'db-file': path }, {}), loadConfig({}, { PLANTS_DB_FILE: path })]) {
      assert.equal(config.db, 'postgres://app:s3cret@db.example:5432/plants');
      assert.equal(config.passwordsInArgv, undefined);
    }
  });

  it('read the file for commands that take only --db (token create and the like)', { timeout: 5000 }, () => {
    const path = file('db-url-2', 'postgres://app:s3cret@db.example/plants');
    assert.equal(loadConfig({}, { PLANTS_DB_FILE: path }, {}, ['db']).db, 'postgres://app:s3cret@db.example/plants');
  });

  it('take --redis from --redis-url-file', { timeout: 5000 }, () => {
    const path = file('redis-url', 'redis://:s3cret@cache.example:6379\n');
    // --redis counts only with a limit on.
    const limited = { 'rate-limit': '100/1s' } as const;
    assert.equal(loadConfig({ 'redis-url-file': path, ...limited }, {}).redis, 'redis://:s3cret@cache.example:6379');
    assert.match(
      refused({ 'redis-url-file': file('bad-redis', 'http://x') }),
      /must hold a redis:\/\/ or rediss:\/\/ URL/,
    );
    assert.match(
      refused({ 'redis-url-file': file('unparsable-redis', 'redis://:s3cret@[cache') }),
      /must hold a redis:\/\/ or rediss:\/\/ URL/,
    );
  });

  it(
    'refuse both the value and its file, a missing file and an empty one, without printing a password',
    { timeout: 5000 },
    () => {
      const path = file('db-url-3', `postgres://app:${PASSWORD}@h:99999/db`);
      assert.match(refused({ db: './x.db', 'db-file': path }), /^set either --db or --db-file, not both$/);
      assert.match(refused({ 'db-file': join(dir, 'missing') }), /^--db-file: cannot read .* \(no such file\)$/);
      assert.match(refused({}, { PLANTS_DB_FILE: file('empty', '\n') }), /^PLANTS_DB_FILE: .* is empty$/);
      const malformed = refused({ 'db-file': path });
      assert.match(malformed, /is not a valid PostgreSQL URL/);
      assert.ok(!leaks(malformed), malformed);
    },
  );

  it('note a password given in argv, not one from the environment', { timeout: 5000 }, () => {
    const url = 'postgres://app:s3cret@db.example/plants';
    const limited = { 'rate-limit': '100/1s' } as const;
    assert.deepEqual(loadConfig({ db: url, redis: 'redis://:pw@cache.example', ...limited }, {}).passwordsInArgv, [
      '--db',
      '--redis',
    ]);
    assert.equal(
      loadConfig({ ...limited }, { DATABASE_URL: url, PLANTS_REDIS_URL: 'redis://:pw@c' }).passwordsInArgv,
      undefined,
    );
    assert.equal(loadConfig({ db: 'postgres://app@db.example/plants' }, {}).passwordsInArgv, undefined);
  });

  it('warn with the advice for the flags that carry a password, and only theirs', { timeout: 5000 }, () => {
    const limited = { 'rate-limit': '100/1s' } as const;
    const warning = (flags: Record<string, string>) => argvPasswordWarning(loadConfig(flags, {}).passwordsInArgv!);
    const db = warning({ db: 'postgres://app:s3cret@db.example/plants', redis: 'redis://cache.example', ...limited });
    assert.match(db, /^--db carries a password on the command line, .*\(ps\); give it in PLANTS_DB or DATABASE_URL, /);
    assert.match(db, /--db-file \(PGPASSWORD and PGPASSFILE work too\)$/);
    assert.doesNotMatch(db, /redis/i);
    const redis = warning({
      db: 'postgres://app@db.example/plants',
      redis: 'redis://:s3cret@cache.example',
      ...limited,
    });
    assert.match(
      redis,
      /^--redis carries a password on the command line, .*; give it in PLANTS_REDIS_URL, or in a file named by --redis-url-file$/,
    );
    assert.doesNotMatch(redis, /PLANTS_DB|DATABASE_URL|--db|PG/);
    const both = warning({
      db: 'postgres://app:s3cret@db.example/plants',
      redis: 'redis://:pw@cache.example',
      ...limited,
    });
    assert.match(both, /^--db and --redis carry a password on the command line, /);
    assert.match(
      both,
      /the URL of --db in PLANTS_DB or DATABASE_URL, or in a file named by --db-file .*, and that of --redis in PLANTS_REDIS_URL, or in a file named by --redis-url-file$/,
    );
    for (const text of [db, redis, both]) assert.ok(!text.includes('s3cret') && !text.includes(':pw@'), text);
  });
});

describeOnStore('postgres', 'serve with a password in argv', (fx) => {
  it(
    'warns at start, without printing the password, and not when the URL comes from a file',
    { timeout: 60_000 },
    async () => {
      const url = new URL(fx.db);
      url.password = 'Argv5ecretPw';
      const inArgv = await startServer(serveArgs(url.toString()));
      await stopGracefully(inArgv);
      assert.match(inArgv.stdout, /--db carries a password on the command line/);
      assert.doesNotMatch(inArgv.stdout, /--redis|PLANTS_REDIS_URL/);
      assert.ok(!inArgv.stdout.includes('Argv5ecretPw') && !inArgv.stderr.includes('Argv5ecretPw'), inArgv.stdout);

      const dir = mkdtempSync(join(tmpdir(), 'plant-store-dbfile-'));
      try {
        const path = join(dir, 'db-url');
        writeFileSync(path, url.toString(), { mode: 0o600 });
        const fromFile = await startServer(['--host', '127.0.0.1', '--port', '0', '--db-file', path]);
        await stopGracefully(fromFile);
        assert.doesNotMatch(fromFile.stdout, /password on the command line/);
        assert.match(fromFile.stdout, /listening/i);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
