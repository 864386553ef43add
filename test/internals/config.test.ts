// loadConfig: where each setting comes from, how values are read, and the
// messages for the values people get wrong.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, SETTINGS, checkDb, loadConfig, type SettingName } from '../../src/config.js';

function refused(flags: Partial<Record<SettingName, string>>, env: Record<string, string> = {}): string {
  try {
    loadConfig(flags, env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `a ConfigError, not ${String(error)}`);
    return error.message;
  }
  assert.fail(`accepted ${JSON.stringify({ flags, env })}`);
}

describe('loadConfig', () => {
  it('gives every default when nothing is set, and a frozen object', () => {
    const config = loadConfig({}, {});
    assert.equal(config.host, SETTINGS.host.default);
    assert.equal(config.port, 8080);
    assert.equal(config.db, './data/plants.db');
    assert.equal(config.durability, 'full');
    assert.equal(config.logLevel, 'info');
    assert.equal(config.corsOrigin, 'off');
    assert.ok(Object.isFrozen(config));
  });

  it('flags win over environment variables, which win over defaults', () => {
    const env = { PLANTS_PORT: '9000', PLANTS_HOST: '0.0.0.0', PLANTS_LOG_LEVEL: 'debug' };
    const config = loadConfig({ port: '9001' }, env);
    assert.equal(config.port, 9001);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.logLevel, 'debug');
  });

  it('reads only the settings a command uses from flags and environment', () => {
    const config = loadConfig({ db: 'x.db', port: '1' }, { PORT: 'abc', DATABASE_URL: 'y.db' }, {}, ['db']);
    assert.equal(config.db, 'x.db');
    assert.equal(config.port, 8080, 'port is not among the settings read, so PORT=abc is ignored');
  });

  it('names the flag or the environment variable a bad value came from', () => {
    assert.match(refused({ port: 'abc' }), /^--port must be a whole number, got "abc"$/);
    assert.match(refused({}, { PORT: 'abc' }), /^PORT must be a whole number/);
    assert.match(refused({ port: '70000' }), /--port/);
    assert.match(refused({}, { PLANTS_BODY_LIMIT: '1' }), /PLANTS_BODY_LIMIT/);
    assert.match(
      refused({ 'list-default-limit': '20', 'list-max-limit': '10' }),
      /--list-default-limit \(20\) must not exceed --list-max-limit \(10\)/,
    );
  });

  it('says what a valid value is, for every kind of setting', () => {
    assert.match(refused({ host: '' }), /^--host must be not empty, got ""$/);
    assert.match(
      refused({ 'redis-key-prefix': 'p'.repeat(201) }),
      /^--redis-key-prefix must be at most 200 characters/,
    );
    assert.match(
      refused({ 'admin-port': '70000' }),
      /^--admin-port must be a whole number from 0 to 65535, or off, got 70000$/,
    );
    assert.match(
      refused({ 'rate-limit': '2000000000/1m' }),
      /^--rate-limit must be N\/1s, N\/1m or N\/1h, or off, got \{"max":2000000000,"windowMs":60000\}$/,
    );
    assert.match(
      refused({}, { PLANTS_WEBHOOK_TIMEOUT_MS: '50' }),
      /^PLANTS_WEBHOOK_TIMEOUT_MS must be a whole number from 100 to 120000/,
    );
    // Not a setting of its own (set by tests): named as a flag all the same.
    assert.throws(
      () => loadConfig({}, {}, { jwksCooldownMs: 60_000 }),
      /^ConfigError: --jwks-cooldown-ms must be a whole number from 0 to 30000, got 60000$/,
    );
  });

  it('webhook-lease-ms: unset by default; when set, room for an attempt and the record of its outcome', () => {
    assert.equal(loadConfig({}, {}).webhookLeaseMs, undefined);
    assert.equal(loadConfig({}, { PLANTS_WEBHOOK_LEASE_MS: '' }).webhookLeaseMs, undefined);
    assert.equal(loadConfig({ 'webhook-lease-ms': '11000' }, {}).webhookLeaseMs, 11_000);
    assert.equal(loadConfig({ 'webhook-lease-ms': '1500', 'webhook-timeout-ms': '500' }, {}).webhookLeaseMs, 1500);
    assert.match(
      refused({ 'webhook-lease-ms': '10999' }),
      /^--webhook-lease-ms \(10999\) must be at least --webhook-timeout-ms \+ 1000 \(11000\)/,
    );
    assert.match(
      refused({ 'webhook-timeout-ms': '2000' }, { PLANTS_WEBHOOK_LEASE_MS: '2500' }),
      /^PLANTS_WEBHOOK_LEASE_MS \(2500\) must be at least --webhook-timeout-ms \+ 1000 \(3000\)/,
    );
    assert.match(refused({ 'webhook-lease-ms': '1000' }), /--webhook-lease-ms must be a whole number from 1100/);
  });

  it('access-log: off by default, on from the bare flag or true/1 in the environment', () => {
    assert.equal(loadConfig({}, {}).accessLog, false);
    assert.equal(loadConfig({ 'access-log': 'true' }, {}).accessLog, true);
    assert.equal(loadConfig({}, { PLANTS_ACCESS_LOG: '1' }).accessLog, true);
    assert.equal(loadConfig({}, { PLANTS_ACCESS_LOG: 'false' }).accessLog, false);
    assert.match(refused({}, { PLANTS_ACCESS_LOG: 'yes' }), /^PLANTS_ACCESS_LOG must be true or false, got "yes"$/);
    assert.equal(loadConfig({}, {}).slowRequestMs, 1000);
    assert.equal(loadConfig({ 'slow-request-ms': '0' }, {}).slowRequestMs, 0);
    assert.match(refused({}, { PLANTS_SLOW_REQUEST_MS: '1s' }), /^PLANTS_SLOW_REQUEST_MS must be a whole number/);
  });

  it('workers: a number or auto', () => {
    assert.equal(loadConfig({ workers: '3' }, {}).workers, 3);
    assert.ok(loadConfig({ workers: 'auto' }, {}).workers >= 1);
    assert.match(refused({ workers: 'many' }), /--workers must be a whole number/);
  });

  it('enum settings name their allowed values and take any case', () => {
    assert.equal(refused({ durability: 'fast' }), '--durability must be one of full, normal, got "fast"');
    assert.equal(
      refused({}, { PLANTS_LOG_LEVEL: 'verbose' }),
      'PLANTS_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    );
    assert.equal(loadConfig({ 'log-level': 'WARN' }, {}).logLevel, 'warn');
    assert.equal(loadConfig({}, { PLANTS_LOG_LEVEL: 'Debug' }).logLevel, 'debug');
    assert.equal(loadConfig({ durability: 'Normal' }, {}).durability, 'normal');
  });
});

describe('--db forms', () => {
  const accepted = [
    './data/plants.db',
    'plants.db',
    '/var/lib/plant-store/plants.db',
    'postgres/plants.db',
    './odd:name.db',
    'postgres://user:secret@db.internal:5432/plants',
    'postgresql://localhost/plants',
    'POSTGRES://localhost/plants',
  ];
  for (const db of accepted) {
    it(`accepts ${db}`, () => {
      assert.equal(checkDb(db), undefined);
      assert.equal(loadConfig({ db }, {}).db, db);
    });
  }

  const urlLike: [string, RegExp][] = [
    ['mysql://root:hunter2@localhost/plants', /a mysql: URL/],
    ['postgres:/localhost/plants', /malformed PostgreSQL URL/],
    ['postgresql//localhost/plants', /malformed PostgreSQL URL/],
    ['postgres:localhost', /malformed PostgreSQL URL/],
    ['sqlite:///tmp/plants.db', /a sqlite: URL/],
    ['file:plants.db', /a file: URL/],
    ['https://example.com/plants.db', /an? https: URL/],
    ['postgres://[not-a-host/plants', /not a valid PostgreSQL URL/],
  ];
  for (const [db, why] of urlLike) {
    it(`refuses ${db}, naming the supported forms`, () => {
      const message = refused({ db });
      assert.match(message, /^--db /);
      assert.match(message, why);
      assert.match(message, /SQLite file path/);
      assert.match(message, /postgres:\/\//);
      assert.match(message, /postgresql:\/\//);
      assert.ok(!message.includes('hunter2'), 'the password is not repeated');
    });
  }

  it('names DATABASE_URL when the value came from there', () => {
    assert.match(refused({}, { DATABASE_URL: 'mysql://localhost/x' }), /^DATABASE_URL looks like a mysql: URL/);
  });
});

describe('--db sslmode', () => {
  const url = (query: string) => `postgresql://app:Pa55word@127.0.0.1/plants${query}`;

  it('takes the modes pg and libpq take, and a URL without one', () => {
    for (const mode of ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'])
      assert.equal(loadConfig({ db: url(`?sslmode=${mode}`) }, {}).db, url(`?sslmode=${mode}`));
    for (const query of ['', '?application_name=x', '?sslmode='])
      assert.equal(loadConfig({ db: url(query) }, {}).db, url(query));
  });

  it('refuses any other, naming the value, where it came from and the modes, never the password', () => {
    for (const [query, shown] of [
      ['?sslmode=bogus', 'bogus'],
      ['?sslmode=Require', 'Require'],
      ['?sslmode=verify_full&application_name=x', 'verify_full'],
      // pg reads the last of a repeated parameter.
      ['?sslmode=require&sslmode=bogus', 'bogus'],
    ] as const) {
      const message = refused({ db: url(query) });
      assert.equal(
        message,
        `--db has sslmode="${shown}", which is not an SSL mode; use one of disable, allow, prefer, require, verify-ca, verify-full or no-verify`,
      );
    }
    assert.match(refused({}, { PLANTS_DB: url('?sslmode=bogus') }), /^PLANTS_DB has sslmode="bogus"/);
    assert.match(refused({}, { DATABASE_URL: url('?sslmode=bogus') }), /^DATABASE_URL has sslmode="bogus"/);
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-sslmode-'));
    try {
      const path = join(dir, 'db-url');
      writeFileSync(path, url('?sslmode=bogus'), { mode: 0o600 });
      const message = refused({ 'db-file': path });
      assert.equal(message.startsWith(`the URL in ${path} (--db-file) has sslmode="bogus"`), true, message);
      assert.ok(!message.includes('Pa55word'), message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('--cors-origin', () => {
  it('is off by default and takes *, one origin or several', () => {
    assert.equal(loadConfig({}, {}).corsOrigin, 'off');
    assert.equal(loadConfig({ 'cors-origin': '*' }, {}).corsOrigin, '*');
    assert.equal(
      loadConfig({}, { PLANTS_CORS_ORIGIN: 'https://a.example, http://localhost:5173' }).corsOrigin,
      'https://a.example, http://localhost:5173',
    );
  });

  it('refuses a path, a trailing slash or a missing scheme, naming the value', () => {
    for (const bad of ['https://a.example/', 'https://a.example/app', 'a.example', 'https://a.example,,']) {
      assert.match(refused({ 'cors-origin': bad }), /^--cors-origin must be off, \* or origins/);
    }
  });
});
