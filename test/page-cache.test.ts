// List pages are reused from memory while nothing changed; a change made by
// another connection to the same SQLite file (another worker or server
// process) must be visible to the very next request after it was acknowledged.
import assert from 'node:assert/strict';
import { before, it } from './helpers/requirements.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app/app.js';
import { issueToken } from '../src/auth/tokens.js';
import { describeOnStore } from './helpers/stores.js';

describeOnStore('sqlite', 'list page reuse across connections', (fx) => {
  let a: FastifyInstance;
  let b: FastifyInstance;
  let token: string;
  before(async () => {
    // Two stores = two connections to one file, as two processes would have.
    const storeA = await fx.open();
    const storeB = await fx.open();
    a = await buildApp(fx.config(), { store: storeA });
    b = await buildApp(fx.config(), { store: storeB });
    token = (await issueToken(storeA.tokens, { owner: 'shared' })).token;
  });

  const headers = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const names = async (app: FastifyInstance, url = '/plants?limit=5') =>
    (JSON.parse((await app.inject({ method: 'GET', url, headers: headers() })).body) as { name: string }[]).map(
      (p) => p.name,
    );

  it('sees creates and deletes made through another connection at once', async () => {
    assert.deepEqual(await names(b), []);
    for (let i = 1; i <= 20; i++) {
      const created = await a.inject({
        method: 'POST',
        url: '/plants',
        headers: headers(),
        payload: `{"id":${i},"name":"p${i}"}`,
      });
      assert.equal(created.statusCode, 200);
      const seen = await names(b, '/plants?limit=100');
      assert.equal(seen.at(-1), `p${i}`, `after create ${i}`);
      assert.equal(seen.length, i);
      // Same page again: served from memory, still right.
      assert.deepEqual(await names(b, '/plants?limit=100'), seen);
    }
    for (let i = 1; i <= 5; i++) {
      assert.equal((await a.inject({ method: 'DELETE', url: `/plants/${i}`, headers: headers() })).statusCode, 204);
      assert.deepEqual((await names(b)).slice(0, 1), [`p${i + 1}`], `after delete ${i}`);
    }
  });

  it('sees its own writes at once', async () => {
    const before = await names(b, '/plants?limit=1000');
    await b.inject({ method: 'POST', url: '/plants', headers: headers(), payload: '{"id":500,"name":"own"}' });
    assert.deepEqual(await names(b, '/plants?limit=1000'), [...before, 'own']);
    await b.inject({ method: 'DELETE', url: '/plants/500', headers: headers() });
    assert.deepEqual(await names(b, '/plants?limit=1000'), before);
  });
});
