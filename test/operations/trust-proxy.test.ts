// --trust-proxy: behind a proxy in the list, the client is the nearest hop
// its Forwarded or X-Forwarded-For header names that is not a trusted proxy,
// and that address is what the failed-authentication limit counts and the
// access log shows. Without the setting the headers are ignored. Through
// app.inject, whose peer address is set per request; behind a real HAProxy
// in test/slow/trust-proxy-haproxy.test.ts.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { buildApp } from '../../src/app/app.js';
import { ConfigError, loadConfig, parseConfigFile, type Config } from '../../src/config.js';
import type { Store } from '../../src/store/store.js';
import { issueToken } from '../../src/auth/tokens.js';
import { runCliInProcess } from '../helpers/cli.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { describeHttpLayer, type StoreFixture } from '../helpers/stores.js';
import type { FastifyInstance } from 'fastify';

const BAD = `Bearer plnt_${'A'.repeat(43)}`;

describe('--trust-proxy settings', () => {
  it('takes addresses and CIDR ranges, IPv4 and IPv6, from the flag, the environment and a file', () => {
    assert.equal(loadConfig({}, {}).trustProxy, 'off');
    const list = '10.0.0.5, 192.168.0.0/16,2001:db8::/32,::1';
    assert.equal(loadConfig({ 'trust-proxy': list }, {}).trustProxy, list);
    assert.equal(loadConfig({}, { PLANTS_TRUST_PROXY: '127.0.0.1' }).trustProxy, '127.0.0.1');
    const file = parseConfigFile('plants.json', JSON.stringify({ 'trust-proxy': ['10.0.0.0/8', 'fd00::/8'] }));
    assert.equal(loadConfig({}, {}, {}, undefined, file).trustProxy, '10.0.0.0/8,fd00::/8');
  });

  it('refuses an entry that is not an address or a CIDR range, naming it', () => {
    for (const bad of ['10.0.0.0/33', '10.1', '10.0.0.0/8/8', 'proxy.example', '2001:db8::/129', '10.0.0.0/', '']) {
      assert.throws(
        () => loadConfig({ 'trust-proxy': `127.0.0.1,${bad}` }, {}),
        (e: Error) => {
          assert.ok(e instanceof ConfigError, String(e));
          assert.match(e.message, new RegExp(`--trust-proxy has "${bad.replace(/[./]/g, '\\$&')}", which is not`));
          return true;
        },
      );
    }
    assert.throws(() => loadConfig({}, { PLANTS_TRUST_PROXY: 'x' }), /PLANTS_TRUST_PROXY has "x"/);
  });

  it('serve exits 2 on a bad range, naming it', async () => {
    const run = await runCliInProcess(['serve', '--db', ':memory:', '--trust-proxy', '10.0.0.0/33']);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /--trust-proxy has "10\.0\.0\.0\/33", which is not an IP address or a CIDR range/);
  });
});

/** The statuses of `n` requests with a bad token and `headers`, from the peer `from`. */
async function failures(app: FastifyInstance, n: number, from: string, headers: Record<string, string>) {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await app.inject({
      method: 'GET',
      url: '/plants',
      remoteAddress: from,
      headers: { authorization: BAD, ...headers },
    });
    statuses.push(res.statusCode);
  }
  return statuses;
}

describeHttpLayer('--trust-proxy and the failed-authentication limit', (fx: StoreFixture) => {
  const PROXY = '10.0.0.1';
  const PROXY6 = 'fd00::1';
  let store: Store;
  let token: string;
  let lines: Record<string, unknown>[];
  const apps: FastifyInstance[] = [];
  before(async () => {
    store = await fx.open();
    token = (await issueToken(store.tokens, { owner: 'behind' })).token;
  });
  after(async () => {
    for (const app of apps) await app.close();
  });

  /** A new app (fresh counters) with at most 3 failed authentications per minute and address, and access lines. */
  async function appWith(trustProxy: string): Promise<FastifyInstance> {
    lines = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const config: Config = {
      ...fx.config({ authFailLimit: { max: 3, windowMs: 60_000 }, accessLog: true, logLevel: 'info' }),
      trustProxy,
    };
    const app = await buildApp(config, { store, logStream: sink });
    apps.push(app);
    return app;
  }

  const list = (app: FastifyInstance, from: string, headers: Record<string, string>) =>
    app.inject({
      method: 'GET',
      url: '/plants',
      remoteAddress: from,
      headers: { authorization: `Bearer ${token}`, ...headers },
    });

  it('without the setting, every client behind a proxy is one address: one locks out all', async () => {
    const app = await appWith('off');
    assert.deepEqual(await failures(app, 4, PROXY, { 'x-forwarded-for': '203.0.113.7' }), [401, 401, 401, 429]);
    assert.equal((await list(app, PROXY, { 'x-forwarded-for': '203.0.113.8' })).statusCode, 429);
    assert.equal((await list(app, PROXY, { forwarded: 'for=203.0.113.8' })).statusCode, 429);
  });

  it('X-Forwarded-For from a trusted proxy: only the failing client is locked out', async () => {
    const app = await appWith(`${PROXY}/32`);
    // A client may write its own X-Forwarded-For: the proxy appends the address it saw, which is the one counted.
    for (const forged of ['198.51.100.1', '198.51.100.2', '198.51.100.3, 198.51.100.4'])
      assert.equal((await failures(app, 1, PROXY, { 'x-forwarded-for': `${forged}, 203.0.113.7` }))[0], 401);
    assert.deepEqual(await failures(app, 1, PROXY, { 'x-forwarded-for': '203.0.113.7' }), [429]);
    assert.equal((await list(app, PROXY, { 'x-forwarded-for': '203.0.113.8' })).statusCode, 200);
    // The forged addresses were never counted as clients of their own.
    assert.equal((await list(app, PROXY, { 'x-forwarded-for': '198.51.100.1' })).statusCode, 200);
    // A peer that is not a trusted proxy is the client, whatever it writes.
    assert.equal((await list(app, '10.0.0.2', { 'x-forwarded-for': '203.0.113.7' })).statusCode, 200);
    const completed = lines.filter((l) => l.msg === 'request completed');
    assert.deepEqual(
      completed.slice(0, 4).map((l) => l.client),
      ['203.0.113.7', '203.0.113.7', '203.0.113.7', '203.0.113.7'],
    );
    assert.equal(completed.at(-1)!.client, '10.0.0.2');
  });

  it('walks a chain of trusted proxies to the nearest hop that is not one', async () => {
    const app = await appWith(`${PROXY},172.16.0.0/12`);
    const hops = '203.0.113.7, 172.16.5.5, 172.20.0.9';
    assert.deepEqual(await failures(app, 4, PROXY, { 'x-forwarded-for': hops }), [401, 401, 401, 429]);
    assert.equal((await list(app, PROXY, { 'x-forwarded-for': '203.0.113.8, 172.16.5.5' })).statusCode, 200);
    assert.equal(lines.find((l) => l.msg === 'request completed')!.client, '203.0.113.7');
  });

  it('Forwarded (RFC 7239) from a trusted proxy, IPv4 and IPv6, with ports and quotes', async () => {
    const app = await appWith(`${PROXY},${PROXY6}`);
    const forms = ['for=203.0.113.7', 'for="203.0.113.7:4711";proto=https', 'for=192.0.2.1, for=203.0.113.7'];
    for (const forwarded of forms) assert.equal((await failures(app, 1, PROXY, { forwarded }))[0], 401);
    assert.deepEqual(await failures(app, 1, PROXY, { forwarded: 'for=203.0.113.7' }), [429]);
    assert.equal((await list(app, PROXY, { forwarded: 'for=203.0.113.8' })).statusCode, 200);

    // IPv6 clients behind an IPv6 proxy: counted by their /64, as without a proxy.
    for (const v6 of ['"[2001:db8:1::7]:4711"', '"[2001:db8:1::8]"', '"[2001:db8:1::9]"'])
      assert.equal((await failures(app, 1, PROXY6, { forwarded: `for=${v6}` }))[0], 401);
    assert.deepEqual(await failures(app, 1, PROXY6, { forwarded: 'for="[2001:db8:1::7]"' }), [429]);
    assert.equal((await list(app, PROXY6, { forwarded: 'for="[2001:db8:2::7]"' })).statusCode, 200);
    assert.equal((await list(app, PROXY6, { 'x-forwarded-for': '2001:db8:3::1' })).statusCode, 200);
    assert.ok(lines.some((l) => l.client === '2001:db8:1::7'));
  });

  it('believes neither header when both name different clients, or Forwarded cannot be read', async () => {
    const app = await appWith(PROXY);
    // A proxy that writes only one header passes the other on: such requests count as the proxy's own.
    const conflicts = [
      { forwarded: 'for=198.51.100.1', 'x-forwarded-for': '203.0.113.7' },
      { forwarded: 'for=198.51.100.2', 'x-forwarded-for': '203.0.113.8' },
      { forwarded: 'for="unterminated', 'x-forwarded-for': '203.0.113.9' },
    ];
    for (const headers of conflicts) assert.equal((await failures(app, 1, PROXY, headers))[0], 401);
    assert.deepEqual(await failures(app, 1, PROXY, { forwarded: 'proto=https' }), [429]);
    assert.ok(lines.filter((l) => l.msg === 'request completed').every((l) => l.client === PROXY));
    // Agreeing headers name the client; so do honest clients, untouched by the forgers.
    const agree = { forwarded: 'for=203.0.113.7', 'x-forwarded-for': '203.0.113.7' };
    assert.equal((await list(app, PROXY, agree)).statusCode, 200);
    assert.equal((await list(app, PROXY, { 'x-forwarded-for': '203.0.113.10' })).statusCode, 200);
  });
});
