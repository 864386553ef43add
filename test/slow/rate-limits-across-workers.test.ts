// Rate limits shared by the workers of serve --workers 2 through Redis, as a
// real cluster: one token gets exactly N successful requests in a window
// whichever worker answers, and other owners count on their own. Two
// instances sharing Redis, and the limits themselves, are in
// test/operations/rate-limits.test.ts.
import assert from 'node:assert/strict';
import { it, needs, requirement } from '../helpers/requirements.js';
import { redisProblem, sequentially, servedBy, statuses, testPrefix } from '../helpers/redis.js';
import { cliToken, migrateWithCli, serveArgs, startServer, stopGracefully } from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const REDIS_URL = process.env.PLANTS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const sharedRedis = await requirement(`Redis at ${REDIS_URL} (set PLANTS_TEST_REDIS_URL)`, async () => {
  const problem = await redisProblem(REDIS_URL);
  if (problem !== undefined) throw new Error(problem);
});

const remaining = (res: { headers: Record<string, unknown> }) => Number(res.headers['ratelimit-remaining']);

needs(sharedRedis, () =>
  describeOnStore('sqlite', 'rate limits shared by the workers of serve --workers 2', (fx) => {
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
