// Where a setting comes from: flag, PLANTS_ variable, the older DATABASE_URL
// and PORT, the configuration file, the default, in that order; and how a
// configuration file is read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, SETTINGS, loadConfig, parseConfigFile, type SettingName } from '../../src/config.js';

const T = { timeout: 5_000 };

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail('accepted');
}

describe('settings table', () => {
  it("every setting has a PLANTS_ variable of its own, but tracing's, which are OpenTelemetry's", T, () => {
    const names = Object.values(SETTINGS).map((s) => s.env);
    for (const [flag, s] of Object.entries(SETTINGS)) {
      if (flag.startsWith('otel-')) assert.equal(s.env, flag.toUpperCase().replaceAll('-', '_'));
      else assert.match(s.env, /^PLANTS_[A-Z0-9_]+$/);
    }
    assert.equal(new Set(names).size, names.length);
  });

  it('only --db and --port keep an older variable, DATABASE_URL and PORT', T, () => {
    const fallbacks = Object.entries(SETTINGS)
      .filter(([, s]) => 'fallbackEnv' in s)
      .map(([name, s]) => [name, (s as { fallbackEnv: string }).fallbackEnv]);
    assert.deepEqual(fallbacks.sort(), [
      ['db', 'DATABASE_URL'],
      ['port', 'PORT'],
    ]);
  });
});

describe('precedence', () => {
  const file = parseConfigFile('plants.json', JSON.stringify({ port: 7000, db: 'file.db', 'log-level': 'warn' }));

  it('flag, then PLANTS_ variable, then the older variable, then the file, then the default', T, () => {
    assert.equal(loadConfig({}, {}, {}, undefined, file).port, 7000);
    assert.equal(loadConfig({}, { PORT: '7001' }, {}, undefined, file).port, 7001);
    assert.equal(loadConfig({}, { PORT: '7001', PLANTS_PORT: '7002' }, {}, undefined, file).port, 7002);
    assert.equal(loadConfig({ port: '7003' }, { PORT: '7001', PLANTS_PORT: '7002' }, {}, undefined, file).port, 7003);
    assert.equal(loadConfig({}, { DATABASE_URL: 'url.db' }, {}, undefined, file).db, 'url.db');
    assert.equal(loadConfig({}, { DATABASE_URL: 'url.db', PLANTS_DB: 'plants.db' }).db, 'plants.db');
    assert.equal(loadConfig({}, {}, {}, undefined, file).logLevel, 'warn');
    assert.equal(loadConfig({}, {}).port, 8080);
  });

  it('HOST and LOG_LEVEL, which other tools set, are not read', T, () => {
    const config = loadConfig({}, { HOST: '0.0.0.0', LOG_LEVEL: 'debug' });
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.logLevel, 'info');
  });

  it('a bad value names where it came from', T, () => {
    assert.equal(
      refusal(() => loadConfig({}, { PORT: 'x' })),
      'PORT must be a whole number, got "x"',
    );
    assert.equal(
      refusal(() => loadConfig({}, { PLANTS_PORT: 'x' })),
      'PLANTS_PORT must be a whole number, got "x"',
    );
    const bad = parseConfigFile('/etc/plants.toml', 'port = 70000\n');
    assert.equal(
      refusal(() => loadConfig({}, {}, {}, undefined, bad)),
      'port in /etc/plants.toml must be a whole number from 0 to 65535, got 70000',
    );
  });
});

describe('configuration file', () => {
  it('TOML and JSON with the flags names, the same values', T, () => {
    const toml = parseConfigFile(
      'plants.toml',
      [
        'host = "0.0.0.0"',
        'port = 9000',
        'access-log = true',
        'rate-limit = "100/1m"',
        'cors-origin = ["https://a.example", "https://b.example"]',
        '',
      ].join('\n'),
    );
    const json = parseConfigFile(
      'plants.json',
      JSON.stringify({
        host: '0.0.0.0',
        port: '9000',
        'access-log': 'true',
        'rate-limit': '100/1m',
        'cors-origin': 'https://a.example,https://b.example',
      }),
    );
    for (const file of [toml, json]) {
      const config = loadConfig({}, {}, {}, undefined, file);
      assert.equal(config.host, '0.0.0.0');
      assert.equal(config.port, 9000);
      assert.equal(config.accessLog, true);
      assert.deepEqual(config.rateLimit, { max: 100, windowMs: 60_000 });
      assert.equal(config.corsOrigin, 'https://a.example,https://b.example');
    }
  });

  it('refuses what it cannot use, saying why', T, () => {
    assert.equal(
      refusal(() => parseConfigFile('p.toml', 'prot = 1\n')),
      'p.toml: unknown setting "prot" (did you mean "port"?)',
    );
    assert.match(
      refusal(() => parseConfigFile('p.toml', 'port = \n')),
      /^p\.toml is not valid TOML: /,
    );
    assert.match(
      refusal(() => parseConfigFile('p.json', '{"port":')),
      /^p\.json is not valid JSON: /,
    );
    assert.match(
      refusal(() => parseConfigFile('p.yaml', 'port: 1')),
      /must end in \.json or \.toml/,
    );
    assert.match(
      refusal(() => parseConfigFile('p.json', '[1]')),
      /must hold an object of settings/,
    );
    const list = parseConfigFile('p.json', JSON.stringify({ host: ['a', 'b'] }));
    assert.equal(
      refusal(() => loadConfig({}, {}, {}, undefined, list)),
      'host in p.json must be a string, a number or a boolean, got ["a","b"]',
    );
  });

  it('a command reads only its own settings from a shared file', T, () => {
    const file = parseConfigFile('p.json', JSON.stringify({ port: 'not a port', db: 'x.db' }));
    const only: SettingName[] = ['db'];
    assert.equal(loadConfig({}, {}, {}, only, file).db, 'x.db');
  });
});

describe('settings that would do nothing, or too little', () => {
  it('--redis with no limit on is refused', T, () => {
    assert.match(
      refusal(() => loadConfig({ redis: 'redis://127.0.0.1:6379' }, {})),
      /^--redis .*no limit is on/,
    );
    assert.equal(loadConfig({ redis: 'redis://h', 'rate-limit': '10/1s' }, {}).redis, 'redis://h');
    assert.equal(loadConfig({ redis: 'redis://h', 'auth-fail-limit': '10/1m' }, {}).redis, 'redis://h');
  });

  it('an http:// JWKS URL or OIDC issuer on another machine is refused unless --jwt-allow-http', T, () => {
    const jwt = { 'jwt-issuer': 'https://id.example', 'jwt-audience': 'plants' } as const;
    assert.match(
      refusal(() => loadConfig({ ...jwt, 'jwks-url': 'http://id.example/jwks' }, {})),
      /^--jwks-url is http:\/\/ to id\.example, another machine.*--jwt-allow-http/,
    );
    assert.match(
      refusal(() => loadConfig({}, { ...envOf(jwt), PLANTS_OIDC_ISSUER: 'http://10.0.0.5' })),
      /^PLANTS_OIDC_ISSUER is http:\/\//,
    );
    for (const url of [
      'http://127.0.0.1:9/jwks',
      'http://localhost/jwks',
      'http://[::1]:8/jwks',
      'https://id.example/j',
    ])
      assert.equal(loadConfig({ ...jwt, 'jwks-url': url }, {}).jwksUrl, url);
    const allowed = loadConfig({ ...jwt, 'jwks-url': 'http://id.example/jwks', 'jwt-allow-http': 'true' }, {});
    assert.equal(allowed.jwksUrl, 'http://id.example/jwks');
  });
});

function envOf(flags: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(flags).map(([name, value]) => [SETTINGS[name as SettingName].env, value]));
}
