// A Redis outage under serve --workers 2 with shared rate limits, in real
// time: requests go on (failing open) through several reconnect attempts,
// each worker warns once, and counting is shared again once Redis is back.
// test/operations/rate-limits.test.ts checks the shared limits themselves.
import assert from 'node:assert/strict';
import { after, commandProbe, it, needs, requirement } from '../helpers/requirements.js';
import { freePort } from '../helpers/ports.js';
import { PrivateRedis, sequentially, servedBy, statuses, testPrefix } from '../helpers/redis.js';
import {
  cliToken,
  delay,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  type HttpResponse,
} from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const redisServer = await requirement('redis-server (Debian package redis-server)', commandProbe('redis-server'));

needs(redisServer, () =>
  describeOnStore('sqlite', 'a Redis outage', (fx) => {
    let redis: PrivateRedis | undefined;
    after(() => redis?.stop());

    it('serves every request within 1 s while Redis is down, warns once per process, stays ready, and shares counters again when Redis is back', async () => {
      redis = new PrivateRedis(await freePort());
      await redis.start();
      await migrateWithCli(fx.db);
      const token = await cliToken(fx.db, 'alice');
      const server = await startServer(
        serveArgs(
          fx.db,
          '--workers',
          '2',
          '--access-log',
          '--rate-limit',
          '5/1m',
          '--redis',
          redis.url,
          '--redis-key-prefix',
          testPrefix(),
        ),
        { listeners: 2 },
      );
      const warnings = () => server.logLines().filter((l) => /Redis is unreachable/.test(String(l.msg)));
      const recoveries = () => server.logLines().filter((l) => /Redis answers again/.test(String(l.msg)));
      try {
        assert.deepEqual(statuses(await sequentially(3, `${server.url}/plants`, token)), { 200: 3 });

        await redis.stop();
        const started = performance.now();
        const during: HttpResponse[] = [];
        for (let i = 0; i < 12; i++) {
          const t0 = performance.now();
          during.push(await httpRequest(`${server.url}/plants`, { token }));
          assert.ok(performance.now() - t0 < 1000, `request ${i} took ${Math.round(performance.now() - t0)} ms`);
          await delay(150);
        }
        // Fail open: more than the limit, all served.
        assert.deepEqual(statuses(during), { 200: 12 });
        const ready = await httpRequest(`${server.url}/readyz`);
        assert.equal(ready.status, 200, ready.body);
        assert.ok(performance.now() - started > 1500, 'the outage lasted through several reconnect attempts');
        await server.waitForOutput(() => warnings().length >= 2, 5000);
        const warnedBy = warnings().map((l) => l.pid);
        assert.equal(new Set(warnedBy).size, 2, `one warning per worker for this outage: ${warnedBy.join(', ')}`);
        assert.equal(recoveries().length, 0);

        await redis.start();
        await server.waitForOutput(() => recoveries().length >= 2, 10_000);
        // The restarted Redis is empty: the window starts again, shared by both workers.
        const again = await sequentially(8, `${server.url}/plants?limit=3`, token);
        assert.deepEqual(statuses(again), { 200: 5, 429: 3 });
        assert.equal((await servedBy(server, '/plants?limit=3', 2)).size, 2, 'both workers served');
        assert.equal(warnings().length, 2, 'no new warning after the recovery');
      } finally {
        await stopGracefully(server);
      }
    });
  }),
);
