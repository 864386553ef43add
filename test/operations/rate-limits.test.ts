// Rate limits: --rate-limit per token owner, --auth-fail-limit per client
// address, each process alone or shared through Redis (--redis), and a Redis
// outage in one process; the outage under serve --workers 2, waited through in
// real time, is in test/slow/redis-outage.test.ts.
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config.js';
import { metricsText } from '../../src/metrics/metrics.js';
import { useApp } from '../helpers/app.js';
import { commandProbe, describe, it, needs, requirement } from '../helpers/requirements.js';
import { describeHttpLayer, describeOnStore } from '../helpers/stores.js';
import {
  cliToken,
  delay,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
} from '../helpers/server.js';
import { freePort } from '../helpers/ports.js';
import { PrivateRedis, redisProblem, sequentially, servedBy, statuses, testPrefix } from '../helpers/redis.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { listPlants } from '../helpers/list-plants.js';

const REDIS_URL = process.env.PLANTS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const redisServer = await requirement('redis-server (Debian package redis-server)', commandProbe('redis-server'));
const sharedRedis = await requirement(`Redis at ${REDIS_URL} (set PLANTS_TEST_REDIS_URL)`, async () => {
  const problem = await redisProblem(REDIS_URL);
  if (problem !== undefined) throw new Error(problem);
});

describe('rate limit settings', () => {
  it('reads N/1s, N/1m and N/1h, and off', () => {
    const c = loadConfig({ 'rate-limit': '40/1m' }, {});
    assert.deepEqual(c.rateLimit, { max: 40, windowMs: 60_000 });
    assert.deepEqual(loadConfig({}, { PLANTS_RATE_LIMIT: '5/1s' }).rateLimit, { max: 5, windowMs: 1000 });
    assert.deepEqual(loadConfig({ 'rate-limit': '7/1h' }, {}).rateLimit, { max: 7, windowMs: 3_600_000 });
    assert.equal(loadConfig({ 'rate-limit': 'off' }, {}).rateLimit, null);
    for (const bad of ['40', '40/2m', '0/1m', '-1/1m', '40/m', 'x/1s', '40/1m ']) {
      assert.throws(
        () => loadConfig({ 'rate-limit': bad }, {}),
        (e: Error) => {
          assert.ok(e instanceof ConfigError);
          assert.match(e.message, /--rate-limit must be N\/1s, N\/1m or N\/1h/);
          return true;
        },
      );
    }
    assert.throws(() => loadConfig({}, { PLANTS_RATE_LIMIT: '1/1d' }), /PLANTS_RATE_LIMIT must be/);
  });

  it('is off by default; failed authentications are limited along with --rate-limit (default 20/1m), or when set', () => {
    const none = loadConfig({}, {});
    assert.equal(none.rateLimit, null);
    assert.equal(none.authFailLimit, null);
    assert.equal(none.redis, null);
    assert.deepEqual(loadConfig({ 'rate-limit': '40/1m' }, {}).authFailLimit, { max: 20, windowMs: 60_000 });
    assert.equal(loadConfig({ 'rate-limit': '40/1m', 'auth-fail-limit': 'off' }, {}).authFailLimit, null);
    assert.deepEqual(loadConfig({}, { PLANTS_AUTH_FAIL_LIMIT: '3/1s' }).authFailLimit, { max: 3, windowMs: 1000 });
  });

  it('takes a redis:// or rediss:// URL', () => {
    const on = { 'rate-limit': '10/1s' } as const;
    assert.equal(loadConfig({ ...on, redis: 'redis://127.0.0.1:6379' }, {}).redis, 'redis://127.0.0.1:6379');
    const fromEnv = loadConfig(on, { PLANTS_REDIS_URL: 'rediss://r.example:6380/2' });
    assert.equal(fromEnv.redis, 'rediss://r.example:6380/2');
    assert.throws(() => loadConfig({ redis: 'http://x' }, {}), /--redis must be a redis:\/\/ or rediss:\/\/ URL/);
    assert.throws(() => loadConfig({ redis: 'redis://[x' }, {}), /--redis must be a redis:\/\/ or rediss:\/\/ URL/);
  });
});

const remaining = (res: { headers: Record<string, unknown> }) => Number(res.headers['ratelimit-remaining']);

describeHttpLayer('rate limits in one process', (fx) => {
  const h = useApp(fx, {
    rateLimit: { max: 3, windowMs: 60_000 },
    authFailLimit: { max: 2, windowMs: 60_000 },
    // Records metrics (the admin listener itself is not started by buildApp).
    adminPort: 0,
  });

  it('lets each token owner make N requests per window, then answers 429 with the Error body and Retry-After', async () => {
    const owner = `alice-${fx.kind}`;
    const [t1, t2, bob] = [await h.token(owner), await h.token(owner), await h.token(`bob-${fx.kind}`)];
    const rejectedBefore = /plant_store_rate_limit_rejections_total\{limit="owner"\} (\d+)/.exec(await metricsText());

    const first = await h.request({ method: 'GET', url: '/plants', token: t1 });
    assert.equal(first.statusCode, 200);
    assert.equal(first.headers['ratelimit-limit'], '3');
    assert.equal(remaining(first), 2);
    assert.ok(Number(first.headers['ratelimit-reset']) > 0 && Number(first.headers['ratelimit-reset']) <= 60);
    // Counted per owner, whichever of its tokens is used, on every route.
    const second = await h.request({ method: 'POST', url: '/plants', token: t2, json: { id: 1, name: 'a' } });
    assert.equal(second.statusCode, 200);
    assert.equal(remaining(second), 1);
    assert.equal(remaining(await h.request({ method: 'DELETE', url: '/plants/1', token: t1 })), 0);

    const over = await h.request({ method: 'POST', url: '/plants', token: t1, json: { id: 2, name: 'b' } });
    assert.equal(over.statusCode, 429);
    assert.match(String(over.headers['content-type']), /^application\/json/);
    const body = JSON.parse(over.body) as { error: number; message: string };
    assert.equal(body.error, 429);
    assert.match(
      body.message,
      /^rate limit exceeded: each token owner may make 3 requests per minute; retry in \d+ s$/,
    );
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
    const retryAfter = Number(over.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, String(retryAfter));
    assert.equal(over.headers['ratelimit-remaining'], '0');
    assert.equal(over.headers['ratelimit-limit'], '3');
    // A refused write changes nothing.
    assert.deepEqual((await listPlants(h.store.plants, owner, 10)).plants, []);
    assert.equal((await h.request({ method: 'GET', url: '/plants', token: t2 })).statusCode, 429);

    // Other owners are unaffected, and so are requests without credentials and the health checks.
    const other = await h.request({ method: 'GET', url: '/plants', token: bob });
    assert.equal(other.statusCode, 200);
    assert.equal(remaining(other), 2);
    assert.equal((await h.request({ method: 'GET', url: '/plants' })).statusCode, 401);
    const health = await h.request({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
    assert.equal(health.headers['ratelimit-limit'], undefined);

    const rejectedAfter = /plant_store_rate_limit_rejections_total\{limit="owner"\} (\d+)/.exec(await metricsText());
    assert.equal(Number(rejectedAfter?.[1]) - Number(rejectedBefore?.[1] ?? 0), 2);
  });

  it('refuses an address with 429 after N failed authentications, valid token or not, until the window ends', async () => {
    const carol = await h.token(`carol-${fx.kind}`);
    const rejected = async () =>
      Number(
        /plant_store_rate_limit_rejections_total\{limit="auth_failures"\} (\d+)/.exec(await metricsText())?.[1] ?? 0,
      );
    const rejectedBefore = await rejected();
    const bad = `plnt_${'x'.repeat(43)}`;
    const from = (remoteAddress: string, token?: string) =>
      h.request({ method: 'GET', url: '/plants', remoteAddress, ...(token === undefined ? {} : { token }) });

    // Requests without credentials are not failed guesses.
    for (let i = 0; i < 4; i++) assert.equal((await from('10.0.0.1')).statusCode, 401);
    assert.equal((await from('10.0.0.1', carol)).statusCode, 200);

    assert.equal((await from('10.0.0.1', bad)).statusCode, 401);
    assert.equal((await from('10.0.0.1', 'plnt_short')).statusCode, 401);
    await delay(10);
    for (const token of [bad, carol]) {
      const refused = await from('10.0.0.1', token);
      assert.equal(refused.statusCode, 429);
      const body = JSON.parse(refused.body) as { error: number; message: string };
      assert.equal(body.error, 429);
      assert.match(
        body.message,
        /^too many failed authentications from this address \(at most 2 per minute\); retry in \d+ s$/,
      );
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal(refused.headers['ratelimit-remaining'], '0');
    }
    assert.equal((await rejected()) - rejectedBefore, 2);
    // Another address, and the health checks of the refused one, are unaffected.
    assert.equal((await from('10.0.0.2', carol)).statusCode, 200);
    assert.equal((await from('10.0.0.2', bad)).statusCode, 401);
    assert.equal((await h.request({ method: 'GET', url: '/healthz', remoteAddress: '10.0.0.1' })).statusCode, 200);
    // IPv6 clients are counted by their /64.
    assert.equal((await from('2001:db8::1', bad)).statusCode, 401);
    assert.equal((await from('2001:db8::2', bad)).statusCode, 401);
    await delay(10);
    assert.equal((await from('2001:db8::3', carol)).statusCode, 429);
  });
});

// The served document declares 429 on every operation that takes a token
// whenever either limit is on (--rate-limit brings the failed-authentication
// limit along), and otherwise only on GET /plants/events, whose caps on open
// streams answer 429 whatever the settings.
for (const [env, limited] of [
  [{ PLANTS_RATE_LIMIT: '3/1m' }, true],
  [{ PLANTS_AUTH_FAIL_LIMIT: '3/1m' }, true],
  [{}, false],
] as const) {
  describeHttpLayer(`429 in /openapi.json with ${JSON.stringify(env)}`, (fx) => {
    const { rateLimit, authFailLimit } = loadConfig({}, env);
    const h = useApp(fx, { rateLimit, authFailLimit });

    it(
      limited ? 'declares 429 on every operation that takes a token' : 'declares 429 only where it can happen',
      async () => {
        const doc = JSON.parse((await h.request({ method: 'GET', url: '/openapi.json' })).body) as {
          paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
        };
        const declares = (path: string, method: string) => doc.paths[path]![method]!.responses['429'] !== undefined;
        for (const [path, method] of [
          ['/plants', 'get'],
          ['/plants', 'post'],
          ['/plants/{id}', 'delete'],
        ] as const)
          assert.equal(declares(path, method), limited, `${method} ${path}`);
        assert.ok(declares('/plants/events', 'get'));
        assert.ok(!declares('/healthz', 'get') && !declares('/readyz', 'get'));
        if (rateLimit !== null) {
          const token = await h.token('documented');
          const answers = [];
          for (let i = 0; i <= rateLimit.max; i++)
            answers.push((await h.request({ method: 'GET', url: '/plants', token })).statusCode);
          assert.deepEqual(answers, [200, 200, 200, 429]);
        }
      },
    );
  });
}

needs(sharedRedis, () =>
  describeOnStore('sqlite', 'rate limits shared through Redis', (fx) => {
    it('with --workers 2 --rate-limit 40/1m --redis, one token gets exactly 40 successful requests, other owners are unaffected', async () => {
      await migrateWithCli(fx.db);
      const [alice, bob] = [await cliToken(fx.db, 'alice'), await cliToken(fx.db, 'bob')];
      const server = await startServer(
        serveArgs(
          fx.db,
          '--workers',
          '2',
          '--access-log',
          '--rate-limit',
          '40/1m',
          '--redis',
          REDIS_URL,
          '--redis-key-prefix',
          testPrefix(),
        ),
        { listeners: 2 },
      );
      try {
        const answers = await sequentially(60, `${server.url}/plants?limit=1`, alice);
        assert.deepEqual(statuses(answers), { 200: 40, 429: 20 });
        assert.deepEqual(
          answers.slice(0, 40).map(remaining),
          Array.from({ length: 40 }, (_, i) => 39 - i),
        );
        assert.equal((await servedBy(server, '/plants?limit=1', 2)).size, 2, 'both workers served alice');

        const other = await sequentially(10, `${server.url}/plants?limit=2`, bob);
        assert.deepEqual(statuses(other), { 200: 10 });
        assert.equal(remaining(other.at(-1)!), 30);
      } finally {
        await stopGracefully(server);
      }
    });
  }),
);

needs(redisServer, () =>
  describeOnStore('sqlite', 'a Redis outage in one process', (fx) => {
    it('serves every request within 1 s while Redis is down, warns once, and counts in Redis again once it is back', async () => {
      const redis = new PrivateRedis(await freePort());
      await redis.start();
      await migrateWithCli(fx.db);
      const token = await cliToken(fx.db, 'alice');
      const server = await serveInProcess(
        serveArgs(fx.db, '--rate-limit', '5/1m', '--redis', redis.url, '--redis-key-prefix', testPrefix()),
      );
      const said = (what: RegExp) => server.logLines().filter((l) => what.test(String(l.msg)));
      try {
        const url = `${server.url}/plants`;
        assert.deepEqual(statuses(await sequentially(3, url, token)), { 200: 3 });
        await redis.stop();
        for (let i = 0; i < 8; i++) {
          const t0 = performance.now();
          assert.equal((await httpRequest(url, { token })).status, 200, `request ${i}: fails open`);
          assert.ok(performance.now() - t0 < 1000, `request ${i} took ${Math.round(performance.now() - t0)} ms`);
        }
        await server.waitForOutput(() => said(/Redis is unreachable/).length >= 1, 5000);
        await redis.start();
        await server.waitForOutput(() => said(/Redis answers again/).length >= 1, 10_000);
        // The restarted Redis is empty: the window starts again.
        assert.deepEqual(statuses(await sequentially(8, `${url}?limit=3`, token)), { 200: 5, 429: 3 });
        assert.equal(said(/Redis is unreachable/).length, 1, 'one warning for the outage');
      } finally {
        await stopGracefully(server);
        await redis.stop();
      }
    });
  }),
);
